package node

import (
	"context"
	"time"

	"paymentlog/node/quota"
	"paymentlog/quic"
	"paymentlog/wire"
)

// Client quotas (wire/quotas.go): the values live in the metadata image,
// each node meters its own traffic against them (node/quota), and the
// broker holds back the answers of a principal over its rate. Node
// certificates are never throttled (they send no Produce or Fetch anyway:
// replication has its own sessions).

// quotaMeter adapts a quota.Meter of the image's quotas to broker.Quotas.
type quotaMeter struct {
	n *Node
	m *quota.Meter
}

// newQuotaMeter meters against the quotas of the image n applied last.
func (n *Node) newQuotaMeter() quotaMeter {
	return quotaMeter{n, quota.New(func(principal, key string) (int64, bool) {
		return n.store.Image().ClientQuota(principal, key)
	}, time.Now)}
}

// metered reports whether p's traffic counts: a client's, while some
// entity has a quota (a cluster without quotas costs a produce nothing).
func (q quotaMeter) metered(p quic.Peer) bool {
	return p.Role != quic.RoleNode && q.n.store.Image().HasClientQuotas()
}

func (q quotaMeter) Wait(p quic.Peer, key string) time.Duration {
	if !q.metered(p) {
		return 0
	}
	return q.m.Wait(principalOf(p), key)
}

func (q quotaMeter) Record(p quic.Peer, key string, n int64) time.Duration {
	if !q.metered(p) {
		return 0
	}
	return q.m.Record(principalOf(p), key, n)
}

func (n *Node) handleAlterClientQuotas(ctx context.Context, peer quic.Peer, f quic.Frame) (quic.FrameType, any, error) {
	var req wire.AlterClientQuotasRequest
	if err := f.Decode(&req); err != nil {
		return 0, nil, err
	}
	if e := n.authorize(peer, wire.OpAlter, wire.ResourceCluster, wire.ClusterResourceName); e != nil {
		return wire.TypeAlterClientQuotas, &wire.AlterClientQuotasResponse{Err: e.Code, Message: e.Message, ControllerID: -1}, nil
	}
	if no, hint := n.noController(); no {
		return wire.TypeAlterClientQuotas, &wire.AlterClientQuotasResponse{Err: wire.NotController, ControllerID: hint}, nil
	}
	resp := n.ctrl.AlterClientQuotas(ctx, req)
	return wire.TypeAlterClientQuotas, &resp, nil
}

func (n *Node) handleDescribeClientQuotas(ctx context.Context, peer quic.Peer, f quic.Frame) (quic.FrameType, any, error) {
	var req wire.DescribeClientQuotasRequest
	if err := f.Decode(&req); err != nil {
		return 0, nil, err
	}
	if e := n.authorize(peer, wire.OpDescribe, wire.ResourceCluster, wire.ClusterResourceName); e != nil {
		return wire.TypeDescribeClientQuotas, &wire.DescribeClientQuotasResponse{Err: e.Code, Message: e.Message}, nil
	}
	img := n.store.Image()
	qs := img.ClientQuotas()
	if qs == nil {
		qs = []wire.ClientQuota{}
	}
	return wire.TypeDescribeClientQuotas, &wire.DescribeClientQuotasResponse{Quotas: qs, MetadataOffset: int64(img.Offset())}, nil
}
