package node_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"paymentlog/client"
)

// `cluster quorum` (Admin.DescribeQuorum) on 3 controllers and a
// broker-only node: the voters and the observer, the active controller as
// leader, every node caught up; a killed node is listed with its error while
// the others still answer.
func TestDescribeQuorumListsVotersObserversAndLag(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tc, c := reassignCluster(ctx, t, 4, nil, nil)
	admin := c.Admin()
	var st client.QuorumStatus
	waitFor(t, "every node answers, caught up with the leader", 15*time.Second, func() bool {
		var err error
		if st, err = admin.DescribeQuorum(ctx); err != nil || len(st.Members) != 4 {
			return false
		}
		for _, m := range st.Members {
			if m.Error != "" || m.Lag != 0 || m.Applied == 0 || m.Term != st.Term {
				return false
			}
		}
		return true
	})
	if !slices.Equal(st.Voters, []int32{1, 2, 3}) || !slices.Equal(st.Observers, []int32{4}) {
		t.Fatalf("voters %v, observers %v; want 1,2,3 and 4", st.Voters, st.Observers)
	}
	if a := int32(tc.activeController()); st.LeaderID != a {
		t.Fatalf("leader %d, the active controller is %d", st.LeaderID, a)
	}
	for _, m := range st.Members {
		wantRole := "voter"
		if m.ID == 4 {
			wantRole = "observer"
		}
		if m.Role != wantRole || m.Leader != (m.ID == st.LeaderID) || m.LastIndex == 0 || m.Commit == 0 || m.VoteGuarded {
			t.Errorf("member %+v: want role %s, leader only on %d, indexes set, not guarded", m, wantRole, st.LeaderID)
		}
	}

	tc.kill(4)
	st, err := admin.DescribeQuorum(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range st.Members {
		switch {
		case m.ID == 4 && (m.Error == "" || m.Role != "observer" || m.Lag != -1):
			t.Errorf("killed node: %+v; want its error, still an observer, lag unknown", m)
		case m.ID != 4 && m.Error != "":
			t.Errorf("node %d: %s", m.ID, m.Error)
		}
	}
	if !strings.Contains(st.Members[3].Error, "127.0.0.1") {
		t.Errorf("the killed node's error %q does not name its address", st.Members[3].Error)
	}
}
