package node

import (
	"context"

	"paymentlog/quic"
	"paymentlog/wire"
)

// The ACL requests (wire/acls.go): changes through the local controller
// (NotController with the hint unless it is the active one), descriptions
// from this node's image. All need a permission on the cluster: alter to
// change, describe to list.

func (n *Node) handleCreateACLs(ctx context.Context, peer quic.Peer, f quic.Frame) (quic.FrameType, any, error) {
	var req wire.CreateACLsRequest
	if err := f.Decode(&req); err != nil {
		return 0, nil, err
	}
	if e := n.authorize(peer, wire.OpAlter, wire.ResourceCluster, wire.ClusterResourceName); e != nil {
		return wire.TypeCreateACLs, &wire.CreateACLsResponse{Err: e.Code, Message: e.Message, ControllerID: -1}, nil
	}
	if no, hint := n.noController(); no {
		return wire.TypeCreateACLs, &wire.CreateACLsResponse{Err: wire.NotController, ControllerID: hint}, nil
	}
	resp := n.ctrl.CreateACLs(ctx, req)
	return wire.TypeCreateACLs, &resp, nil
}

func (n *Node) handleDeleteACLs(ctx context.Context, peer quic.Peer, f quic.Frame) (quic.FrameType, any, error) {
	var req wire.DeleteACLsRequest
	if err := f.Decode(&req); err != nil {
		return 0, nil, err
	}
	if e := n.authorize(peer, wire.OpAlter, wire.ResourceCluster, wire.ClusterResourceName); e != nil {
		return wire.TypeDeleteACLs, &wire.DeleteACLsResponse{Err: e.Code, Message: e.Message, ControllerID: -1}, nil
	}
	if no, hint := n.noController(); no {
		return wire.TypeDeleteACLs, &wire.DeleteACLsResponse{Err: wire.NotController, ControllerID: hint}, nil
	}
	resp := n.ctrl.DeleteACLs(ctx, req)
	return wire.TypeDeleteACLs, &resp, nil
}

func (n *Node) handleDescribeACLs(ctx context.Context, peer quic.Peer, f quic.Frame) (quic.FrameType, any, error) {
	var req wire.DescribeACLsRequest
	if err := f.Decode(&req); err != nil {
		return 0, nil, err
	}
	if e := n.authorize(peer, wire.OpDescribe, wire.ResourceCluster, wire.ClusterResourceName); e != nil {
		return wire.TypeDescribeACLs, &wire.DescribeACLsResponse{Err: e.Code, Message: e.Message}, nil
	}
	if why := wire.CheckACLFilter(req.Filter); why != "" {
		return wire.TypeDescribeACLs, &wire.DescribeACLsResponse{Err: wire.InvalidRequest, Message: why}, nil
	}
	img := n.store.Image()
	acls := img.ACLs().Select(req.Filter)
	if acls == nil {
		acls = []wire.ACLBinding{}
	}
	return wire.TypeDescribeACLs, &wire.DescribeACLsResponse{ACLs: acls, Enforced: n.enforcesACLs(),
		MetadataOffset: int64(img.Offset())}, nil
}
