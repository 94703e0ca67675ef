package node

import (
	"context"

	"paymentlog/quic"
	"paymentlog/wire"
)

// handleReassignPartition answers a ReassignPartitionRequest through the
// local controller (NotController with the hint unless it is the active
// one). The broker side needs nothing of its own: watchMetadata opens an
// added replica's log and follows the leader, and stops and deletes a
// removed one when the completing record is applied.
func (n *Node) handleReassignPartition(ctx context.Context, peer quic.Peer, f quic.Frame) (quic.FrameType, any, error) {
	var req wire.ReassignPartitionRequest
	if err := f.Decode(&req); err != nil {
		return 0, nil, err
	}
	if e := n.authorize(peer, wire.OpAlter, wire.ResourceCluster, wire.ClusterResourceName); e != nil {
		return wire.TypeReassignPartition, &wire.ReassignPartitionResponse{Err: e.Code, Message: e.Message, ControllerID: -1}, nil
	}
	if no, hint := n.noController(); no {
		return wire.TypeReassignPartition, &wire.ReassignPartitionResponse{Err: wire.NotController, ControllerID: hint}, nil
	}
	resp := n.ctrl.ReassignPartition(ctx, req)
	return wire.TypeReassignPartition, &resp, nil
}
