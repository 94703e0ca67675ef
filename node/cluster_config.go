package node

import (
	"context"

	"paymentlog/node/metadata"
	"paymentlog/quic"
	"paymentlog/wire"
)

// handleAlterClusterConfigs answers an AlterClusterConfigsRequest through
// the local controller (NotController with the hint unless it is the
// active one).
func (n *Node) handleAlterClusterConfigs(ctx context.Context, peer quic.Peer, f quic.Frame) (quic.FrameType, any, error) {
	var req wire.AlterClusterConfigsRequest
	if err := f.Decode(&req); err != nil {
		return 0, nil, err
	}
	if e := n.authorize(peer, wire.OpAlter, wire.ResourceCluster, wire.ClusterResourceName); e != nil {
		return wire.TypeAlterClusterConfigs, &wire.AlterClusterConfigsResponse{Err: e.Code, Message: e.Message, ControllerID: -1}, nil
	}
	if no, hint := n.noController(); no {
		return wire.TypeAlterClusterConfigs, &wire.AlterClusterConfigsResponse{Err: wire.NotController, ControllerID: hint}, nil
	}
	resp := n.ctrl.AlterClusterConfigs(ctx, req)
	return wire.TypeAlterClusterConfigs, &resp, nil
}

// applyClusterConfigs applies the cluster configs of img to this node: the
// reassignment throttle (the cluster's when set, else
// --reassignment-throttle), the log cleaner's (else
// --log-cleaner-io-max-bytes-per-second) and thread count (else
// --log-cleaner-threads; the broker clamps it to the dedupe buffer) and the
// scrub quarantines' retention (else --log-scrub-quarantine-retention).
func (n *Node) applyClusterConfigs(img *metadata.Image) {
	rate := n.cfg.ReassignmentThrottle
	if r, ok := img.ReassignmentThrottle(); ok {
		rate = r
	}
	n.broker.SetReassignmentThrottle(rate)
	rate = n.cfg.LogCleanerIOMaxBytesPerSec
	if r, ok := img.LogCleanerIOMax(); ok {
		rate = r
	}
	n.broker.SetCleanerThrottle(rate)
	threads := n.cfg.LogCleanerThreads
	if t, ok := img.LogCleanerThreads(); ok {
		threads = t
	}
	n.broker.SetCleanerThreads(threads)
	retention := n.cfg.LogScrubQuarantineRetention
	if r, ok := img.LogScrubQuarantineRetention(); ok {
		retention = r
	}
	n.broker.SetQuarantineRetention(retention)
}
