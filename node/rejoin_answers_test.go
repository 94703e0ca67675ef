package node

import (
	"testing"

	"paymentlog/wire"
)

func TestRejoinAnswersNeeded(t *testing.T) {
	for n, want := range map[int]int{2: 1, 3: 2, 4: 2, 5: 3, 7: 4} {
		if got := rejoinAnswersNeeded(n); got != want {
			t.Errorf("rejoinAnswersNeeded(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestRejoinAnswersTarget(t *testing.T) {
	type ans struct {
		id   int32
		resp wire.DescribeQuorumResponse
	}
	r := func(last, term uint64, guarded bool) wire.DescribeQuorumResponse {
		return wire.DescribeQuorumResponse{LastIndex: last, Term: term, Guarded: guarded}
	}
	for _, tc := range []struct {
		name        string
		controllers int
		answers     []ans
		ok          bool
		index, term uint64
		majority    bool // Config.FirstStartWithMajority
	}{
		{"one of two others", 3, []ans{{2, r(40, 3, false)}}, false, 0, 0, false},
		{"two unguarded", 3, []ans{{2, r(40, 3, false)}, {3, r(35, 4, false)}}, true, 40, 4, false},
		{"an answer repeated is one answer", 3, []ans{{2, r(40, 3, false)}, {2, r(41, 3, false)}}, false, 0, 0, false},
		{"the highest of all answers over time", 3, []ans{{2, r(45, 3, false)}, {2, r(41, 3, false)}, {3, r(30, 3, false)}}, true, 45, 3, false},
		{"guarded answers do not count", 3, []ans{{2, r(40, 3, false)}, {3, r(12, 3, true)}}, false, 0, 0, false},
		{"first start: all others at term 1, guarded", 3, []ans{{2, r(3, 1, true)}, {3, r(0, 1, true)}}, true, 3, 1, false},
		{"not a first start: one other past term 1", 3, []ans{{2, r(3, 1, true)}, {3, r(9, 2, true)}}, false, 0, 0, false},
		{"five: three of four unguarded", 5, []ans{{2, r(50, 5, false)}, {3, r(60, 5, false)}, {4, r(55, 6, false)}}, true, 60, 6, false},
		{"five: two wiped, a leader's peer down", 5, []ans{{2, r(3, 1, true)}, {4, r(60, 5, false)}, {5, r(60, 5, false)}}, false, 0, 0, false},
		// Two wiped (this one and 2) and two that never heard from a leader:
		// the fifth, down, may hold what only the wiped ones had; wait for it.
		{"five: first start needs all four", 5, []ans{{2, r(3, 1, true)}, {3, r(3, 1, true)}, {4, r(3, 1, true)}}, false, 0, 0, false},
		{"five: all four others at term 1 is a first start", 5, []ans{{2, r(3, 1, true)}, {3, r(3, 1, true)}, {4, r(3, 1, false)}, {5, r(3, 1, false)}}, true, 3, 1, false},
		{"majority first start: one other at term 1", 3, []ans{{2, r(3, 1, true)}}, true, 3, 1, true},
		{"majority first start: not with a term past 1", 3, []ans{{2, r(3, 1, true)}, {3, r(9, 2, false)}}, false, 0, 0, true},
		{"majority first start: five needs two others", 5, []ans{{2, r(3, 1, true)}}, false, 0, 0, true},
		{"majority first start: five, two others", 5, []ans{{2, r(3, 1, true)}, {4, r(0, 0, true)}}, true, 3, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g rejoinAnswers
			g.init(1, "", tc.controllers, tc.majority)
			for _, a := range tc.answers {
				g.add(a.id, a.resp)
			}
			index, term, _, ok := g.target()
			if ok != tc.ok || index != tc.index || term != tc.term {
				t.Fatalf("target() = %d, %d, %v; want %d, %d, %v", index, term, ok, tc.index, tc.term, tc.ok)
			}
		})
	}
}

const (
	nonceA = "0123456789abcdef0123456789abcdef"
	nonceB = "fedcba9876543210fedcba9876543210"
)

// A guarded controller lifts its guard at once when an unguarded controller
// lists it, with the nonce in its own marker, among its first-start
// witnesses; anything less does not.
func TestRejoinAnswersWitnessed(t *testing.T) {
	guarded := func(nonce string) wire.DescribeQuorumResponse {
		return wire.DescribeQuorumResponse{LastIndex: 3, Term: 1, Guarded: true, GuardNonce: nonce}
	}
	unguarded := func(w map[int32]string) wire.DescribeQuorumResponse {
		return wire.DescribeQuorumResponse{LastIndex: 40, Term: 2, Witnessed: w}
	}
	type ans struct {
		id   int32
		resp wire.DescribeQuorumResponse
	}
	for _, tc := range []struct {
		name    string
		nonce   string // this node's (id 3)
		answers []ans
		how     string // "" = no target
	}{
		{"its own nonce lifts", nonceA, []ans{{1, unguarded(map[int32]string{3: nonceA})}}, howWitnessed},
		{"its own nonce among others", nonceA, []ans{{2, unguarded(map[int32]string{1: nonceB, 3: nonceA})}}, howWitnessed},
		{"another nonce (wiped since)", nonceA, []ans{{1, unguarded(map[int32]string{3: nonceB})}}, ""},
		{"its nonce under another id", nonceA, []ans{{1, unguarded(map[int32]string{2: nonceA})}}, ""},
		{"no nonce of its own (older marker)", "", []ans{{1, unguarded(map[int32]string{3: ""})}}, ""},
		{"an empty witness list", nonceA, []ans{{1, unguarded(nil)}}, ""},
		{"a witness itself guarded", nonceA, []ans{{1, wire.DescribeQuorumResponse{Term: 1, LastIndex: 3, Guarded: true, GuardNonce: nonceB,
			Witnessed: map[int32]string{3: nonceA}}}}, ""},
		{"the witness's latest answer no longer lists it", nonceA, []ans{{1, unguarded(map[int32]string{3: nonceA})}, {1, unguarded(nil)}}, ""},
		{"caught-up peers as before", nonceA, []ans{{1, unguarded(nil)}, {2, unguarded(map[int32]string{3: nonceB})}}, howCaughtUpPeers},
		{"a guarded answer with its nonce is not a witness", nonceA, []ans{{1, guarded(nonceA)}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g rejoinAnswers
			g.init(3, tc.nonce, 3, false)
			for _, a := range tc.answers {
				g.newRound()
				g.add(a.id, a.resp)
			}
			index, term, how, ok := g.target()
			if ok != (tc.how != "") || how != tc.how {
				t.Fatalf("target() = %d, %d, %q, %v; want %q", index, term, how, ok, tc.how)
			}
			if how == howWitnessed && (index != 0 || term != 0) {
				t.Fatalf("a witnessed node got target %d, %d; want none", index, term)
			}
		})
	}
}

// A controller that lifts its guard as a first start vouches only for the
// guarded controllers whose nonce it saw before every other answer it
// counted (a round earlier), and only when every other controller answered
// and no log, its own included, is past term 1.
func TestRejoinAnswersWitnesses(t *testing.T) {
	g1 := func(nonce string) wire.DescribeQuorumResponse {
		return wire.DescribeQuorumResponse{LastIndex: 3, Term: 1, Guarded: true, GuardNonce: nonce}
	}
	u1 := wire.DescribeQuorumResponse{LastIndex: 3, Term: 1} // lifted, no election yet
	type ans struct {
		id   int32
		resp wire.DescribeQuorumResponse
	}
	for _, tc := range []struct {
		name        string
		controllers int
		majority    bool
		ownTerm     uint64
		rounds      [][]ans // this node is 1
		want        map[int32]string
	}{
		{"two rounds: both vouched for", 3, false, 1,
			[][]ans{{{2, g1(nonceA)}, {3, g1(nonceB)}}, {{2, g1(nonceA)}, {3, g1(nonceB)}}},
			map[int32]string{2: nonceA, 3: nonceB}},
		{"one round: none (its nonce may be newer than the other answer)", 3, false, 1,
			[][]ans{{{2, g1(nonceA)}, {3, g1(nonceB)}}}, nil},
		{"seen earlier than the other's only answer", 3, false, 1,
			[][]ans{{{3, g1(nonceB)}}, {{2, g1(nonceA)}}},
			map[int32]string{3: nonceB}},
		{"a stale answer does not vouch for a newer nonce", 3, false, 1,
			[][]ans{{{2, g1(nonceA)}}, {{3, g1(nonceB)}}, {{3, g1(nonceB)}}},
			map[int32]string{2: nonceA}},
		{"a nonce changed (wiped) is vouched for from its own first round", 3, false, 1,
			[][]ans{{{2, g1(nonceA)}, {3, g1(nonceB)}}, {{2, g1(nonceA)}, {3, g1(nonceA)}}},
			map[int32]string{2: nonceA}},
		{"one that lifted meanwhile needs nothing", 3, false, 1,
			[][]ans{{{2, g1(nonceA)}, {3, g1(nonceB)}}, {{2, u1}, {3, g1(nonceB)}}},
			map[int32]string{3: nonceB}},
		{"no nonce (older build): nothing to vouch for", 3, false, 1,
			[][]ans{{{2, g1("")}, {3, g1(nonceB)}}, {{2, g1("")}, {3, g1(nonceB)}}},
			map[int32]string{3: nonceB}},
		{"its own log past term 1", 3, false, 2,
			[][]ans{{{2, g1(nonceA)}, {3, g1(nonceB)}}, {{2, g1(nonceA)}, {3, g1(nonceB)}}}, nil},
		{"not a first start", 3, false, 1,
			[][]ans{{{2, g1(nonceA)}, {3, g1(nonceB)}}, {{2, g1(nonceA)}, {3, wire.DescribeQuorumResponse{LastIndex: 9, Term: 2}}}}, nil},
		{"a majority first start vouches for no one", 3, true, 1,
			[][]ans{{{2, g1(nonceA)}}, {{2, g1(nonceA)}}}, nil},
		{"a majority first start with everyone answering does", 3, true, 1,
			[][]ans{{{2, g1(nonceA)}, {3, g1(nonceB)}}, {{2, g1(nonceA)}, {3, g1(nonceB)}}},
			map[int32]string{2: nonceA, 3: nonceB}},
		{"five: all four others, two rounds", 5, false, 1,
			[][]ans{{{2, g1(nonceA)}, {3, g1(nonceB)}, {4, u1}, {5, g1("")}}, {{2, g1(nonceA)}, {3, g1(nonceB)}, {4, u1}, {5, g1("")}}},
			map[int32]string{2: nonceA, 3: nonceB}},
		{"five: one not asked again", 5, false, 1,
			[][]ans{{{2, g1(nonceA)}, {3, g1(nonceB)}, {4, u1}, {5, u1}}, {{2, g1(nonceA)}, {3, g1(nonceB)}, {4, u1}}},
			nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g rejoinAnswers
			g.init(1, nonceA, tc.controllers, tc.majority)
			for _, round := range tc.rounds {
				g.newRound()
				for _, a := range round {
					g.add(a.id, a.resp)
				}
			}
			got := g.witnesses(tc.ownTerm)
			if len(got) != len(tc.want) {
				t.Fatalf("witnesses = %v, want %v", got, tc.want)
			}
			for id, nonce := range tc.want {
				if got[id] != nonce {
					t.Fatalf("witnesses = %v, want %v", got, tc.want)
				}
			}
		})
	}
}

// A controller whose guard lifts passes on the first-start witnesses it was
// told, its own first: the controller that made them may be the one to die.
func TestRejoinAnswersVouchFor(t *testing.T) {
	var g rejoinAnswers
	g.init(1, nonceA, 5, false)
	g.newRound()
	g.add(2, wire.DescribeQuorumResponse{Term: 2, Witnessed: map[int32]string{1: nonceA, 3: nonceB, 4: nonceA}})
	g.add(3, wire.DescribeQuorumResponse{Term: 2, Witnessed: map[int32]string{4: nonceB, 5: nonceB}})
	g.add(4, wire.DescribeQuorumResponse{Term: 1, Guarded: true, GuardNonce: nonceB, Witnessed: map[int32]string{5: nonceA, 6: nonceA}})
	g.add(5, wire.DescribeQuorumResponse{Term: 2, Witnessed: map[int32]string{6: nonceA, 99: nonceB, 2: "not a nonce"}})
	known := func(id int32) bool { return id >= 1 && id <= 6 }
	got := g.vouchFor(map[int32]string{5: nonceA, 6: ""}, known)
	want := map[int32]string{3: nonceB, 4: nonceA, 5: nonceA, 6: nonceA}
	if len(got) != len(want) {
		t.Fatalf("vouchFor = %v, want %v", got, want)
	}
	for id, nonce := range want {
		if got[id] != nonce {
			t.Fatalf("vouchFor = %v, want %v", got, want)
		}
	}
	var none rejoinAnswers
	none.init(1, nonceA, 3, false)
	if got := none.vouchFor(nil, known); got != nil {
		t.Fatalf("vouchFor with nothing to pass on = %v, want nil", got)
	}
}
