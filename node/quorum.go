package node

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"paymentlog/quic"
	"paymentlog/segment"
	"paymentlog/wire"
)

// ErrControllerMembershipChange matches the error Start returns when this
// node is listed in --controllers but the other listed controllers already
// run a cluster whose voters do not include it.
var ErrControllerMembershipChange = errors.New("node: controller membership changes are not supported")

// membershipCheckTimeout bounds how long a fresh controller-eligible node
// asks the other listed controllers about their quorum before bootstrapping.
// Controllers that are not up yet (the cluster's first start) cost this
// much once; an answer ends the wait at once.
const membershipCheckTimeout = 500 * time.Millisecond

// handleDescribeQuorum answers with this node's view of the controller
// quorum (see wire.DescribeQuorumRequest).
func (n *Node) handleDescribeQuorum(ctx context.Context, peer quic.Peer, f quic.Frame) (quic.FrameType, any, error) {
	var req wire.DescribeQuorumRequest
	if err := f.Decode(&req); err != nil {
		return 0, nil, err
	}
	if e := n.authorize(peer, wire.OpDescribe, wire.ResourceCluster, wire.ClusterResourceName); e != nil {
		return wire.TypeDescribeQuorum, &wire.DescribeQuorumResponse{Err: e.Code}, nil
	}
	st := n.raft.Status()
	resp := wire.DescribeQuorumResponse{Controllers: formatControllers(n.cfg.Controllers), Term: st.Term, Commit: st.Commit,
		LastIndex: st.LastIndex, Guarded: st.VoteGuarded}
	if st.VoteGuarded {
		resp.GuardNonce = st.GuardNonce
	} else if w := n.firstStartWitnesses.Load(); w != nil {
		resp.Witnessed = *w
	}
	for _, v := range st.Voters {
		resp.Voters = append(resp.Voters, int32(v))
	}
	for _, l := range st.Learners {
		resp.Learners = append(resp.Learners, int32(l))
	}
	resp.Applied = st.Applied
	return wire.TypeDescribeQuorum, &resp, nil
}

// formatControllers writes controllers as the --controllers flag does.
func formatControllers(ctrls map[int32]string) string {
	ids := make([]int32, 0, len(ctrls))
	for id := range ctrls {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("%d@%s", id, ctrls[id])
	}
	return strings.Join(parts, ",")
}

// metadataLogFresh reports whether this node has no metadata log yet (its
// raft node would bootstrap).
func metadataLogFresh(cfg Config) bool {
	fs := cfg.MetadataFS
	if fs == nil {
		fs = segment.OSFS{}
	}
	names, err := fs.ReadDir(filepath.Join(cfg.DataDir, MetadataDirName))
	return err != nil || len(names) == 0
}

// checkControllerMembership runs before a fresh controller-eligible node
// bootstraps its metadata log. The raft group's voters are fixed when a
// cluster is created (every controller bootstraps the same entries from
// --controllers); a node added to --controllers later would bootstrap a log
// of its own (entries 1..n of a different configuration) and never join.
// So it asks the other listed controllers for their quorum: the first that
// answers with voters decides, allowed when they include this node (the
// cluster's first start, a node started after the others), refused
// otherwise. No answer within the timeout (the other controllers are not up
// yet, or run an older build): start as before.
func checkControllerMembership(ctx context.Context, ep *quic.Endpoint, cfg Config, timeout time.Duration) error {
	var others []int32
	for id := range cfg.Controllers {
		if id != cfg.ID {
			others = append(others, id)
		}
	}
	if len(others) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type answer struct {
		id   int32
		resp wire.DescribeQuorumResponse
		err  error
	}
	answers := make(chan answer, len(others))
	for _, id := range others {
		go func() {
			var resp wire.DescribeQuorumResponse
			err := ep.Call(quic.Idempotent(quic.ExpectNode(ctx, id)), cfg.Controllers[id], wire.TypeDescribeQuorum, wire.DescribeQuorumRequest{}, &resp)
			answers <- answer{id, resp, err}
		}()
	}
	for range others {
		a := <-answers
		if a.err != nil || a.resp.Err != wire.None || len(a.resp.Voters) == 0 {
			continue
		}
		if slices.Contains(a.resp.Voters, cfg.ID) {
			return nil
		}
		voters := slices.Clone(a.resp.Voters)
		slices.Sort(voters)
		return fmt.Errorf("%w: node %d is listed in --controllers and its metadata log (%s) is empty, but controller %d at %s already runs a cluster whose controllers are %v (its --controllers is %s), without node %d; started like this, node %d would bootstrap a metadata log of its own and never join. "+
			"To add node %d to that cluster, start it with the cluster's --controllers list (%s): it joins as a broker-only node. Changing the set of controllers needs a new cluster",
			ErrControllerMembershipChange, cfg.ID, filepath.Join(cfg.DataDir, MetadataDirName), a.id, cfg.Controllers[a.id], voters, a.resp.Controllers, cfg.ID, cfg.ID,
			cfg.ID, a.resp.Controllers)
	}
	return nil
}
