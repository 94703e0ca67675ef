package node

import (
	"context"

	"paymentlog/quic"
	"paymentlog/wire"
)

// handleAlterConfigs answers an AlterConfigsRequest through the local
// controller (NotController with a hint unless it is active), like
// CreateTopic.
func (n *Node) handleAlterConfigs(ctx context.Context, peer quic.Peer, f quic.Frame) (quic.FrameType, any, error) {
	var req wire.AlterConfigsRequest
	if err := f.Decode(&req); err != nil {
		return 0, nil, err
	}
	if e := n.authorize(peer, wire.OpAlter, wire.ResourceTopic, req.Topic); e != nil {
		return wire.TypeAlterConfigs, &wire.AlterConfigsResponse{Err: e.Code, Message: e.Message, ControllerID: -1}, nil
	}
	if no, hint := n.noController(); no {
		return wire.TypeAlterConfigs, &wire.AlterConfigsResponse{Err: wire.NotController, ControllerID: hint}, nil
	}
	resp := n.ctrl.AlterConfigs(ctx, req)
	return wire.TypeAlterConfigs, &resp, nil
}
