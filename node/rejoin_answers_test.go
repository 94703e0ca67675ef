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
			g.init(tc.controllers, tc.majority)
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
