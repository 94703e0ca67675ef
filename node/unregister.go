package node

import (
	"context"

	"paymentlog/quic"
	"paymentlog/wire"
)

// handleUnregisterBroker answers an UnregisterBrokerRequest through the
// local controller (NotController with the hint unless it is the active
// one).
func (n *Node) handleUnregisterBroker(ctx context.Context, peer quic.Peer, f quic.Frame) (quic.FrameType, any, error) {
	var req wire.UnregisterBrokerRequest
	if err := f.Decode(&req); err != nil {
		return 0, nil, err
	}
	if e := n.authorize(peer, wire.OpAlter, wire.ResourceCluster, wire.ClusterResourceName); e != nil {
		return wire.TypeUnregisterBroker, &wire.UnregisterBrokerResponse{Err: e.Code, Message: e.Message, ControllerID: -1}, nil
	}
	if no, hint := n.noController(); no {
		return wire.TypeUnregisterBroker, &wire.UnregisterBrokerResponse{Err: wire.NotController, ControllerID: hint}, nil
	}
	resp := n.ctrl.UnregisterBroker(ctx, req)
	return wire.TypeUnregisterBroker, &resp, nil
}
