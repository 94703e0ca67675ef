package client

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"paymentlog/wire"
)

// QuorumMember is one node's own view of the metadata log (Kafka's
// kafka-metadata-quorum describe --replication), as `paymentlog cluster
// quorum --json` prints it.
type QuorumMember struct {
	ID   int32  `json:"id"`
	Addr string `json:"addr"`
	// Role is "voter" (a controller), "observer" (a broker-only node: a
	// raft learner), or "" when neither the node nor the leader said.
	Role string `json:"role"`
	// Leader: this node is the raft leader, the active controller.
	Leader bool   `json:"leader"`
	Term   uint64 `json:"term"`
	// LastIndex is the last index of the node's metadata log on disk,
	// Commit the highest it knows committed, Applied the last it applied to
	// its image (0 from a node older than the field).
	LastIndex uint64 `json:"last_index"`
	Commit    uint64 `json:"commit"`
	Applied   uint64 `json:"applied,omitempty"`
	// Lag is the leader's last index minus this node's (0 for the leader
	// and for a node ahead of the leader's answer, which was read a moment
	// earlier); -1 when the leader did not answer.
	Lag int64 `json:"lag"`
	// VoteGuarded: the node started with an empty metadata log and does not
	// vote until it has caught up (README: a controller that lost its
	// metadata log).
	VoteGuarded bool `json:"vote_guarded"`
	// Error is why the node did not answer ("" when it did).
	Error string `json:"error,omitempty"`
}

// QuorumStatus is `paymentlog cluster quorum --json`.
type QuorumStatus struct {
	LeaderID int32  `json:"leader_id"` // the active controller DescribeCluster named; -1 when none
	Term     uint64 `json:"term"`      // the leader's, else the highest answered
	// Voters and Observers are the raft configuration as the leader (else
	// the answering node with the highest term) applied it.
	Voters    []int32        `json:"voters"`
	Observers []int32        `json:"observers"`
	Members   []QuorumMember `json:"members"`
}

// DescribeQuorum asks every node, each registered broker and each
// controller in the answering nodes' --controllers lists, for its view of
// the metadata log (wire.DescribeQuorumRequest), concurrently, each within
// the client's request timeout. A node that does not answer is listed with
// its error; the call fails only when DescribeCluster does.
func (a *Admin) DescribeQuorum(ctx context.Context) (QuorumStatus, error) {
	cl, err := a.DescribeCluster(ctx)
	if err != nil {
		return QuorumStatus{}, err
	}
	addrs := map[int32]string{}
	for _, n := range cl.Nodes {
		addrs[n.ID] = n.Addr
	}
	answers := a.askQuorum(ctx, addrs)
	if err := refusedByAll(answers); err != nil {
		return QuorumStatus{}, err
	}
	// Controllers that are not registered (never started, or unregistered
	// as brokers) are named in the others' --controllers lists.
	extra := map[int32]string{}
	for _, r := range answers {
		if r.resp == nil {
			continue
		}
		for id, addr := range parseControllerList(r.resp.Controllers) {
			if _, ok := addrs[id]; !ok {
				extra[id] = addr
			}
		}
	}
	if len(extra) > 0 {
		for id, r := range a.askQuorum(ctx, extra) {
			answers[id] = r
		}
		for id, addr := range extra {
			addrs[id] = addr
		}
	}
	return quorumStatus(cl.ControllerID, addrs, answers), nil
}

// refusedByAll returns the refusal when every node refused the request
// as ClusterAuthorizationFailed (the client's principal may not describe
// the cluster): a table of nodes that all said no tells nothing.
func refusedByAll(answers map[int32]quorumAnswer) error {
	var err error
	for _, r := range answers {
		if ErrorCode(r.err) != wire.ClusterAuthorizationFailed {
			return nil
		}
		err = r.err
	}
	if err == nil {
		return nil
	}
	return fmt.Errorf("client: describe quorum: %w (describe on the cluster: `paymentlog acl add --principal NAME --operation describe --cluster`)", err)
}

type quorumAnswer struct {
	resp *wire.DescribeQuorumResponse
	err  error
}

// askQuorum sends DescribeQuorum to every node in addrs at once.
func (a *Admin) askQuorum(ctx context.Context, addrs map[int32]string) map[int32]quorumAnswer {
	out := make(map[int32]quorumAnswer, len(addrs))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for id, addr := range addrs {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, a.c.cfg.RequestTimeout)
			defer cancel()
			var resp wire.DescribeQuorumResponse
			err := a.c.call(cctx, addr, wire.TypeDescribeQuorum, &wire.DescribeQuorumRequest{}, &resp)
			if err == nil && resp.Err != wire.None {
				err = resp.Err.Err(addr)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				out[id] = quorumAnswer{err: err}
			} else {
				out[id] = quorumAnswer{resp: &resp}
			}
		})
	}
	wg.Wait()
	return out
}

// quorumStatus assembles the answers: leaderID is the active controller
// DescribeCluster named (-1: none).
func quorumStatus(leaderID int32, addrs map[int32]string, answers map[int32]quorumAnswer) QuorumStatus {
	st := QuorumStatus{LeaderID: leaderID}
	// The configuration and term come from the leader's answer, else from
	// the answer with the highest term.
	var ref *wire.DescribeQuorumResponse
	if r := answers[leaderID]; r.resp != nil {
		ref = r.resp
	} else {
		for _, r := range answers {
			if r.resp != nil && (ref == nil || r.resp.Term > ref.Term) {
				ref = r.resp
			}
		}
	}
	st.Voters, st.Observers = []int32{}, []int32{}
	if ref != nil {
		st.Term = ref.Term
		st.Voters = append(st.Voters, ref.Voters...)
		st.Observers = append(st.Observers, ref.Learners...)
		slices.Sort(st.Voters)
		slices.Sort(st.Observers)
	}
	ids := make([]int32, 0, len(addrs))
	for id := range addrs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		m := QuorumMember{ID: id, Addr: addrs[id], Leader: id == st.LeaderID, Lag: -1}
		switch {
		case slices.Contains(st.Voters, id):
			m.Role = "voter"
		case slices.Contains(st.Observers, id):
			m.Role = "observer"
		}
		r := answers[id]
		if r.resp == nil {
			if r.err != nil {
				m.Error = r.err.Error()
			}
			st.Members = append(st.Members, m)
			continue
		}
		m.Term, m.LastIndex, m.Commit, m.Applied, m.VoteGuarded = r.resp.Term, r.resp.LastIndex, r.resp.Commit, r.resp.Applied, r.resp.Guarded
		if m.Role == "" {
			switch {
			case slices.Contains(r.resp.Voters, id):
				m.Role = "voter"
			case slices.Contains(r.resp.Learners, id):
				m.Role = "observer"
			}
		}
		if l := answers[st.LeaderID]; st.LeaderID >= 0 && l.resp != nil {
			m.Lag = max(int64(l.resp.LastIndex)-int64(m.LastIndex), 0)
		}
		st.Members = append(st.Members, m)
	}
	return st
}

// parseControllerList reads a --controllers value (id@addr,...) as a node
// reports it; entries that do not parse are skipped.
func parseControllerList(s string) map[int32]string {
	out := map[int32]string{}
	for part := range strings.SplitSeq(s, ",") {
		id, addr, ok := strings.Cut(strings.TrimSpace(part), "@")
		n, err := strconv.ParseInt(id, 10, 32)
		if ok && err == nil && n > 0 && addr != "" {
			out[int32(n)] = addr
		}
	}
	return out
}
