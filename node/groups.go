package node

import (
	"context"

	"paymentlog/quic"
	"paymentlog/wire"
)

// The group requests (wire/group_offsets.go) are answered by the local
// controller: NotController with the hint unless it is the active one.

func (n *Node) handleOffsetCommit(ctx context.Context, peer quic.Peer, f quic.Frame) (quic.FrameType, any, error) {
	var req wire.OffsetCommitRequest
	if err := f.Decode(&req); err != nil {
		return 0, nil, err
	}
	if e := n.authorizeCommit(peer, req); e != nil {
		return wire.TypeOffsetCommit, &wire.OffsetCommitResponse{Err: e.Code, Message: e.Message, ControllerID: -1}, nil
	}
	if no, hint := n.noController(); no {
		return wire.TypeOffsetCommit, &wire.OffsetCommitResponse{Err: wire.NotController, ControllerID: hint}, nil
	}
	resp := n.ctrl.CommitOffsets(ctx, req)
	return wire.TypeOffsetCommit, &resp, nil
}

func (n *Node) handleOffsetFetch(ctx context.Context, peer quic.Peer, f quic.Frame) (quic.FrameType, any, error) {
	var req wire.OffsetFetchRequest
	if err := f.Decode(&req); err != nil {
		return 0, nil, err
	}
	if e := n.authorize(peer, wire.OpDescribe, wire.ResourceGroup, req.Group); e != nil {
		return wire.TypeOffsetFetch, &wire.OffsetFetchResponse{Err: e.Code, Message: e.Message, ControllerID: -1}, nil
	}
	if no, hint := n.noController(); no {
		return wire.TypeOffsetFetch, &wire.OffsetFetchResponse{Err: wire.NotController, ControllerID: hint}, nil
	}
	resp := n.ctrl.FetchOffsets(ctx, req)
	resp.Offsets = n.describableOffsets(peer, resp.Offsets)
	return wire.TypeOffsetFetch, &resp, nil
}

func (n *Node) handleListGroups(ctx context.Context, peer quic.Peer, f quic.Frame) (quic.FrameType, any, error) {
	var req wire.ListGroupsRequest
	if err := f.Decode(&req); err != nil {
		return 0, nil, err
	}
	if no, hint := n.noController(); no {
		return wire.TypeListGroups, &wire.ListGroupsResponse{Err: wire.NotController, ControllerID: hint}, nil
	}
	resp := n.ctrl.ListGroups(ctx)
	resp.Groups = n.describableGroups(peer, resp.Groups)
	return wire.TypeListGroups, &resp, nil
}

func (n *Node) handleDeleteGroup(ctx context.Context, peer quic.Peer, f quic.Frame) (quic.FrameType, any, error) {
	var req wire.DeleteGroupRequest
	if err := f.Decode(&req); err != nil {
		return 0, nil, err
	}
	if e := n.authorize(peer, wire.OpDelete, wire.ResourceGroup, req.Group); e != nil {
		return wire.TypeDeleteGroup, &wire.DeleteGroupResponse{Err: e.Code, Message: e.Message, ControllerID: -1}, nil
	}
	if no, hint := n.noController(); no {
		return wire.TypeDeleteGroup, &wire.DeleteGroupResponse{Err: wire.NotController, ControllerID: hint}, nil
	}
	resp := n.ctrl.DeleteGroup(ctx, req)
	return wire.TypeDeleteGroup, &resp, nil
}

func (n *Node) handleGroupHeartbeat(ctx context.Context, peer quic.Peer, f quic.Frame) (quic.FrameType, any, error) {
	var req wire.GroupHeartbeatRequest
	if err := f.Decode(&req); err != nil {
		return 0, nil, err
	}
	if e := n.authorizeHeartbeat(peer, req); e != nil {
		return wire.TypeGroupHeartbeat, &wire.GroupHeartbeatResponse{Err: e.Code, Message: e.Message, ControllerID: -1}, nil
	}
	if no, hint := n.noController(); no {
		return wire.TypeGroupHeartbeat, &wire.GroupHeartbeatResponse{Err: wire.NotController, ControllerID: hint}, nil
	}
	resp := n.ctrl.GroupHeartbeat(ctx, req)
	return wire.TypeGroupHeartbeat, &resp, nil
}
