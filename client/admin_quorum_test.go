package client

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"paymentlog/wire"
)

// quorumStatus takes the configuration from the leader's answer, else from
// the answer with the highest term; lag is against the leader's last index
// (never negative), unknown without the leader's answer.
func TestQuorumStatusAssemblesAnswers(t *testing.T) {
	addrs := map[int32]string{1: "a:1", 2: "a:2", 3: "a:3", 4: "a:4"}
	ans := func(term, last uint64, voters, learners []int32) quorumAnswer {
		return quorumAnswer{resp: &wire.DescribeQuorumResponse{Term: term, LastIndex: last, Commit: last, Voters: voters, Learners: learners}}
	}
	answers := map[int32]quorumAnswer{
		1: ans(5, 90, []int32{1, 2, 3}, []int32{4}),
		2: ans(5, 100, []int32{3, 2, 1}, []int32{4}),
		3: ans(4, 102, []int32{1, 2, 3}, nil), // answered after the leader, further on
		4: {err: errors.New("dial timeout")},
	}
	st := quorumStatus(2, addrs, answers)
	if st.LeaderID != 2 || st.Term != 5 || !slices.Equal(st.Voters, []int32{1, 2, 3}) || !slices.Equal(st.Observers, []int32{4}) {
		t.Fatalf("status %+v", st)
	}
	want := []struct {
		role string
		lag  int64
		err  bool
	}{{"voter", 10, false}, {"voter", 0, false}, {"voter", 0, false}, {"observer", -1, true}}
	for i, m := range st.Members {
		if m.ID != int32(i+1) || m.Role != want[i].role || m.Lag != want[i].lag || (m.Error != "") != want[i].err || m.Leader != (m.ID == 2) {
			t.Errorf("member %+v, want %+v", m, want[i])
		}
	}

	// No answer from the leader: the highest term's configuration, no lags.
	answers[2] = quorumAnswer{err: errors.New("down")}
	st = quorumStatus(2, addrs, answers)
	if st.LeaderID != 2 || st.Term != 5 || !slices.Equal(st.Observers, []int32{4}) {
		t.Fatalf("without the leader's answer: %+v", st)
	}
	for _, m := range st.Members {
		if m.Lag != -1 {
			t.Errorf("member %d lag %d without the leader's answer, want -1", m.ID, m.Lag)
		}
	}
	if got := parseControllerList("1@h:1, 2@h:2,x@h:3,4@,5"); len(got) != 2 || got[1] != "h:1" || got[2] != "h:2" {
		t.Errorf("parseControllerList: %v", got)
	}
}

// parseControllerList reads a string a node sent: whatever it holds, every
// entry returned has a positive id and an address, and nothing panics.
func FuzzParseControllerList(f *testing.F) {
	for _, s := range []string{"", "1@127.0.0.1:7101,2@127.0.0.1:7102,3@127.0.0.1:7103", "1@h:1, 2@h:2,x@h:3,4@,5", "@@,,-1@a,2147483648@b", "0@a,1@a@b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for id, addr := range parseControllerList(s) {
			if id <= 0 || addr == "" || !strings.Contains(s, addr) {
				t.Fatalf("%q: entry %d@%q", s, id, addr)
			}
		}
	})
}

// A quorum description every node refused as ClusterAuthorizationFailed
// is that refusal, not a table of nodes that did not answer; one node that
// answered (or failed otherwise) keeps the table.
func TestDescribeQuorumRefusedByAll(t *testing.T) {
	refused := quorumAnswer{err: wire.ClusterAuthorizationFailed.Err("127.0.0.1:1")}
	if err := refusedByAll(map[int32]quorumAnswer{1: refused, 2: refused}); ErrorCode(err) != wire.ClusterAuthorizationFailed ||
		!strings.Contains(err.Error(), "--operation describe --cluster") {
		t.Fatalf("all refused: %v", err)
	}
	if err := refusedByAll(map[int32]quorumAnswer{1: refused, 2: {resp: &wire.DescribeQuorumResponse{}}}); err != nil {
		t.Fatalf("one answered: %v", err)
	}
	if err := refusedByAll(map[int32]quorumAnswer{1: refused, 2: {err: errors.New("dial timeout")}}); err != nil {
		t.Fatalf("one unreachable: %v", err)
	}
	if err := refusedByAll(nil); err != nil {
		t.Fatalf("no answers: %v", err)
	}
}
