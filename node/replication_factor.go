package node

import (
	"context"

	"paymentlog/quic"
	"paymentlog/wire"
)

// handleAlterReplicationFactor answers an AlterReplicationFactorRequest
// through the local controller (NotController with the hint unless it is
// the active one). As for a reassignment, the brokers need nothing of their
// own: watchMetadata opens added replicas and deletes removed ones.
func (n *Node) handleAlterReplicationFactor(ctx context.Context, peer quic.Peer, f quic.Frame) (quic.FrameType, any, error) {
	var req wire.AlterReplicationFactorRequest
	if err := f.Decode(&req); err != nil {
		return 0, nil, err
	}
	if e := n.authorize(peer, wire.OpAlter, wire.ResourceCluster, wire.ClusterResourceName); e != nil {
		return wire.TypeAlterReplicationFactor, &wire.AlterReplicationFactorResponse{Err: e.Code, Message: e.Message, ControllerID: -1}, nil
	}
	if no, hint := n.noController(); no {
		return wire.TypeAlterReplicationFactor, &wire.AlterReplicationFactorResponse{Err: wire.NotController, ControllerID: hint}, nil
	}
	resp := n.ctrl.AlterReplicationFactor(ctx, req)
	return wire.TypeAlterReplicationFactor, &resp, nil
}
