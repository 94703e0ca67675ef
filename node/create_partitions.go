package node

import (
	"context"

	"paymentlog/quic"
	"paymentlog/wire"
)

// handleCreatePartitions answers a CreatePartitionsRequest through the local
// controller (NotController with the hint unless it is the active one), as
// handleCreateTopic does. The broker side needs nothing of its own: the new
// partitions arrive as PartitionCreated records, and watchMetadata opens
// their logs and starts leading or following them like a new topic's.
func (n *Node) handleCreatePartitions(ctx context.Context, peer quic.Peer, f quic.Frame) (quic.FrameType, any, error) {
	var req wire.CreatePartitionsRequest
	if err := f.Decode(&req); err != nil {
		return 0, nil, err
	}
	if e := n.authorize(peer, wire.OpAlter, wire.ResourceTopic, req.Name); e != nil {
		return wire.TypeCreatePartitions, &wire.CreatePartitionsResponse{Err: e.Code, Message: e.Message, ControllerID: -1}, nil
	}
	if no, hint := n.noController(); no {
		return wire.TypeCreatePartitions, &wire.CreatePartitionsResponse{Err: wire.NotController, ControllerID: hint}, nil
	}
	resp := n.ctrl.CreatePartitions(ctx, req)
	return wire.TypeCreatePartitions, &resp, nil
}
