package clienttest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"paymentlog/quic"
	"paymentlog/wire"
)

// Serve starts one QUIC endpoint per broker on 127.0.0.1 (dev-mode TLS) and
// makes the brokers' addresses theirs. Call it before any request; Close
// stops the endpoints.
func (c *Cluster) Serve(ctx context.Context) error {
	c.mu.Lock()
	n := len(c.mu.brokers)
	c.mu.Unlock()
	for i := 0; i < n; i++ {
		logger := c.Logger
		if logger == nil {
			logger = slog.New(slog.DiscardHandler)
		}
		ep, err := quic.New(ctx, quic.Config{Addr: "127.0.0.1:0", Logger: logger})
		if err != nil {
			c.Close()
			return fmt.Errorf("clienttest: endpoint: %w", err)
		}
		addr := ep.Addr()
		c.mu.Lock()
		c.mu.brokers[i].Addr = addr
		c.mu.eps = append(c.mu.eps, ep)
		c.mu.Unlock()
		register(ep, c, addr)
		go ep.Serve(context.WithoutCancel(ctx))
	}
	return nil
}

func register(ep *quic.Endpoint, c *Cluster, addr string) {
	h := func(t quic.FrameType, newReq func() any) {
		ep.Handle(t, func(ctx context.Context, _ quic.Peer, f quic.Frame) (quic.FrameType, any, error) {
			req := newReq()
			if err := f.Decode(req); err != nil {
				return 0, nil, err
			}
			v, err := c.dispatch(ctx, addr, t, req)
			if err != nil {
				var oe *quic.OpError
				if errors.As(err, &oe) {
					return 0, nil, oe.Err
				}
				return 0, nil, err
			}
			return t, v, nil
		})
	}
	h(wire.TypeMetadata, func() any { return &wire.MetadataRequest{} })
	h(wire.TypeDescribeCluster, func() any { return &wire.DescribeClusterRequest{} })
	h(wire.TypeInitProducerID, func() any { return &wire.InitProducerIDRequest{} })
	h(wire.TypeCreateTopic, func() any { return &wire.CreateTopicRequest{} })
	h(wire.TypeDeleteTopic, func() any { return &wire.DeleteTopicRequest{} })
	h(wire.TypeCreatePartitions, func() any { return &wire.CreatePartitionsRequest{} })
	h(wire.TypeProduce, func() any { return &wire.ProduceRequest{} })
	h(wire.TypeFetch, func() any { return &wire.FetchRequest{} })
	h(wire.TypeListOffsets, func() any { return &wire.ListOffsetsRequest{} })
	h(wire.TypeDescribeQuorum, func() any { return &wire.DescribeQuorumRequest{} })
	h(wire.TypeDescribeReplica, func() any { return &wire.DescribeReplicaRequest{} })
	h(wire.TypeOffsetCommit, func() any { return &wire.OffsetCommitRequest{} })
	h(wire.TypeOffsetFetch, func() any { return &wire.OffsetFetchRequest{} })
	h(wire.TypeListGroups, func() any { return &wire.ListGroupsRequest{} })
	h(wire.TypeDeleteGroup, func() any { return &wire.DeleteGroupRequest{} })
	h(wire.TypeGroupHeartbeat, func() any { return &wire.GroupHeartbeatRequest{} })
	h(wire.TypeCreateACLs, func() any { return &wire.CreateACLsRequest{} })
	h(wire.TypeDeleteACLs, func() any { return &wire.DeleteACLsRequest{} })
	h(wire.TypeDescribeACLs, func() any { return &wire.DescribeACLsRequest{} })
	h(wire.TypeAlterClientQuotas, func() any { return &wire.AlterClientQuotasRequest{} })
	h(wire.TypeDescribeClientQuotas, func() any { return &wire.DescribeClientQuotasRequest{} })
	h(wire.TypeAlterClusterConfigs, func() any { return &wire.AlterClusterConfigsRequest{} })
	h(wire.TypeAlterConfigs, func() any { return &wire.AlterConfigsRequest{} })
}

// Bootstrap is the brokers' addresses joined for --bootstrap.
func (c *Cluster) Bootstrap() string {
	s := ""
	for i, a := range c.Addrs() {
		if i > 0 {
			s += ","
		}
		s += a
	}
	return s
}

// Close stops the QUIC endpoints started by Serve.
func (c *Cluster) Close() {
	c.mu.Lock()
	eps := c.mu.eps
	c.mu.eps = nil
	c.mu.Unlock()
	for _, ep := range eps {
		ep.Close()
	}
}
