package node

import (
	"context"
	"fmt"
	"time"

	"paymentlog/node/metadata"
	"paymentlog/quic"
	"paymentlog/wire"
)

// registerHandlers installs the node-level request handlers: metadata and
// cluster description (answered from the local image), producer ids, and the
// controller's requests (answered by the local controller, which replies
// NotController with a hint unless it is active). Produce, Fetch,
// ListOffsets, replica fetch sessions and DescribeReplica are the broker's;
// raft messages are raftnode's. The audit trail wraps those that change
// the cluster.
func (n *Node) registerHandlers() {
	handle := func(t quic.FrameType, h quic.UnaryHandler) { n.ep.Handle(t, n.audited(t, h)) } // audit_requests.go
	handle(wire.TypeMetadata, n.handleMetadata)
	handle(wire.TypeDescribeCluster, n.handleDescribeCluster)
	handle(wire.TypeInitProducerID, n.handleInitProducerID)
	handle(wire.TypeDescribeQuorum, n.handleDescribeQuorum)

	handle(wire.TypeCreateTopic, n.handleCreateTopic)
	handle(wire.TypeDeleteTopic, n.handleDeleteTopic)
	handle(wire.TypeCreatePartitions, n.handleCreatePartitions)
	handle(wire.TypeReassignPartition, n.handleReassignPartition)
	handle(wire.TypeAlterReplicationFactor, n.handleAlterReplicationFactor)
	handle(wire.TypeAlterClusterConfigs, n.handleAlterClusterConfigs)
	handle(wire.TypeUnregisterBroker, n.handleUnregisterBroker)
	handle(wire.TypeOffsetCommit, n.handleOffsetCommit)
	handle(wire.TypeOffsetFetch, n.handleOffsetFetch)
	handle(wire.TypeListGroups, n.handleListGroups)
	handle(wire.TypeDeleteGroup, n.handleDeleteGroup)
	handle(wire.TypeGroupHeartbeat, n.handleGroupHeartbeat)
	handle(wire.TypeAlterConfigs, n.handleAlterConfigs)
	handle(wire.TypeCreateACLs, n.handleCreateACLs)
	handle(wire.TypeDeleteACLs, n.handleDeleteACLs)
	handle(wire.TypeDescribeACLs, n.handleDescribeACLs)
	handle(wire.TypeAlterClientQuotas, n.handleAlterClientQuotas)
	handle(wire.TypeDescribeClientQuotas, n.handleDescribeClientQuotas)
	handle(wire.TypeBrokerRegister, n.handleBrokerRegister)
	handle(wire.TypeBrokerHeartbeat, n.handleBrokerHeartbeat)
	handle(wire.TypeAlterPartition, n.handleAlterPartition)
	handle(wire.TypeAllocateProducerIDs, n.handleAllocateProducerIDs)
}

// activeControllerID is the raft leader as this node sees it, -1 if none.
func (n *Node) activeControllerID() int32 {
	if l := n.raft.Status().Leader; l != 0 {
		return int32(l)
	}
	return -1
}

func (n *Node) handleMetadata(ctx context.Context, peer quic.Peer, f quic.Frame) (quic.FrameType, any, error) {
	var req wire.MetadataRequest
	if err := f.Decode(&req); err != nil {
		return 0, nil, err
	}
	names, err := metadataTopics(req.Topics)
	if err != nil {
		return wire.TypeMetadata, &wire.MetadataResponse{Err: wire.InvalidRequest, Message: err.Error(), ControllerID: -1}, nil
	}
	if req.MaxWaitMs > 0 {
		// A long poll: hold the answer until the image moves past
		// WaitAbove (or the wait ends; then answer with what there is).
		wait := time.Duration(min(req.MaxWaitMs, wire.MaxMetadataWaitMs)) * time.Millisecond
		wctx, cancel := context.WithTimeout(ctx, wait)
		stop := context.AfterFunc(n.runCtx, cancel) // a stopping node answers at once
		_, _ = n.store.WaitFor(wctx, func(img *metadata.Image) bool { return int64(img.Offset()) > req.WaitAbove })
		stop()
		cancel()
	}
	resp := n.store.Image().MetadataResponse(names)
	resp.ControllerID = n.activeControllerID()
	resp.Topics = n.describableTopics(peer, len(names) > 0, resp.Topics)
	for ti := range resp.Topics {
		t := &resp.Topics[ti]
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			p.HighWatermark, p.LogStartOffset = -1, -1
			if p.Leader == n.cfg.ID {
				if hw, lso, _, ok := n.broker.PartitionInfo(t.Name, p.Partition); ok {
					p.HighWatermark, p.LogStartOffset = hw, lso
				}
			}
		}
	}
	return wire.TypeMetadata, &resp, nil
}

// metadataTopics returns the distinct names a Metadata request asks for
// (see distinct), or an error if there are more than wire.MaxMetadataTopics
// of them or one is longer than any topic name: each name that is no topic
// is answered with an entry echoing it, and a request of many such names
// made an answer larger than a frame, built in full before being refused.
func metadataTopics(names []string) ([]string, error) {
	for _, name := range names {
		if len(name) > wire.MaxTopicNameLen {
			return nil, fmt.Errorf("metadata request names a topic of %d bytes; topic names are at most %d", len(name), wire.MaxTopicNameLen)
		}
	}
	out := distinct(names, wire.MaxMetadataTopics)
	if len(out) > wire.MaxMetadataTopics {
		return nil, fmt.Errorf("metadata request names more than %d distinct topics; ask for all (none named) or fewer", wire.MaxMetadataTopics)
	}
	return out, nil
}

// distinct returns names without repetitions, in first-seen order, stopping
// after max+1. A topic named many times is described once: each repetition
// costs the requester a few bytes and would cost the answer a whole topic
// description (every partition with its replica and ISR lists).
func distinct(names []string, max int) []string {
	if len(names) < 2 {
		return names
	}
	seen := make(map[string]struct{}, min(len(names), max+1))
	out := names[:0:0]
	for _, name := range names {
		if _, dup := seen[name]; !dup {
			seen[name] = struct{}{}
			out = append(out, name)
			if len(out) > max {
				break
			}
		}
	}
	return out
}

func (n *Node) handleDescribeCluster(ctx context.Context, _ quic.Peer, f quic.Frame) (quic.FrameType, any, error) {
	var req wire.DescribeClusterRequest
	if err := f.Decode(&req); err != nil {
		return 0, nil, err
	}
	resp := n.store.Image().DescribeClusterResponse()
	n.mu.Lock()
	contact := n.mu.ctrlContact
	// The broker is brought in line with each image right after it
	// (watch.go), so this may trail the image's offset.
	brokerOff := int64(n.mu.reconciled)
	n.mu.Unlock()
	resp.BrokerOffset = &brokerOff
	resp.ControllerID = describedController(n.activeControllerID(), contact, time.Now(), n.cfg.SessionTimeout)
	return wire.TypeDescribeCluster, &resp, nil
}

// describedController is the active controller DescribeCluster reports:
// the raft leader this node knows of, but only while an active controller
// has answered one of this node's heartbeats within the last session
// timeout; otherwise -1 (unknown).
//
// The node states in the answer come from this node's metadata image, and
// only an active controller changes them (a dead broker is fenced by the
// controller). Without recent contact, that image may be frozen: the
// controllers lost their majority, or this node is cut off from them. The
// raft leader alone does not tell: a broker-only node (a raft learner)
// never campaigns and keeps naming the last leader it heard from forever,
// and a controller follower names it until its election timeout. So -1
// also tells the reader (`cluster status`) that the states are the last
// ones known, not confirmed.
func describedController(raftLeader int32, lastContact, now time.Time, sessionTimeout time.Duration) int32 {
	if raftLeader < 0 || lastContact.IsZero() || now.Sub(lastContact) > sessionTimeout {
		return -1
	}
	return raftLeader
}

func (n *Node) handleInitProducerID(ctx context.Context, peer quic.Peer, f quic.Frame) (quic.FrameType, any, error) {
	var req wire.InitProducerIDRequest
	if err := f.Decode(&req); err != nil {
		return 0, nil, err
	}
	// An idempotent producer id is for writing: write on some topic
	// (Kafka's IdempotentWrite, implied by write on any topic).
	if !n.superPeer(peer) && !n.store.Image().ACLs().AllowsAny(principalOf(peer), peerIP(peer), wire.OpWrite, wire.ResourceTopic) {
		return wire.TypeInitProducerID, &wire.InitProducerIDResponse{Err: wire.ClusterAuthorizationFailed}, nil
	}
	id, err := n.nextProducerID(ctx)
	if err != nil {
		return wire.TypeInitProducerID, &wire.InitProducerIDResponse{Err: wire.BrokerNotAvailable}, nil
	}
	return wire.TypeInitProducerID, &wire.InitProducerIDResponse{ProducerID: id, ProducerEpoch: 0}, nil
}

// noController reports whether this node has no controller (broker-only),
// with the active controller as the hint to answer NotController with.
func (n *Node) noController() (bool, int32) { return n.ctrl == nil, n.activeControllerID() }

func (n *Node) handleCreateTopic(ctx context.Context, peer quic.Peer, f quic.Frame) (quic.FrameType, any, error) {
	var req wire.CreateTopicRequest
	if err := f.Decode(&req); err != nil {
		return 0, nil, err
	}
	// Create on the cluster, or on the topic (Kafka: either).
	if !n.allowed(peer, wire.OpCreate, wire.ResourceCluster, wire.ClusterResourceName) {
		if e := n.authorize(peer, wire.OpCreate, wire.ResourceTopic, req.Name); e != nil {
			return wire.TypeCreateTopic, &wire.CreateTopicResponse{Err: e.Code, Message: e.Message, ControllerID: -1}, nil
		}
	}
	if no, hint := n.noController(); no {
		return wire.TypeCreateTopic, &wire.CreateTopicResponse{Err: wire.NotController, ControllerID: hint}, nil
	}
	resp := n.ctrl.CreateTopic(ctx, req)
	return wire.TypeCreateTopic, &resp, nil
}

func (n *Node) handleDeleteTopic(ctx context.Context, peer quic.Peer, f quic.Frame) (quic.FrameType, any, error) {
	var req wire.DeleteTopicRequest
	if err := f.Decode(&req); err != nil {
		return 0, nil, err
	}
	if e := n.authorize(peer, wire.OpDelete, wire.ResourceTopic, req.Name); e != nil {
		return wire.TypeDeleteTopic, &wire.DeleteTopicResponse{Err: e.Code, Message: e.Message, ControllerID: -1}, nil
	}
	if no, hint := n.noController(); no {
		return wire.TypeDeleteTopic, &wire.DeleteTopicResponse{Err: wire.NotController, ControllerID: hint}, nil
	}
	resp := n.ctrl.DeleteTopic(ctx, req)
	return wire.TypeDeleteTopic, &resp, nil
}

func (n *Node) handleBrokerRegister(ctx context.Context, peer quic.Peer, f quic.Frame) (quic.FrameType, any, error) {
	var req wire.BrokerRegisterRequest
	if err := f.Decode(&req); err != nil {
		return 0, nil, err
	}
	if err := peer.CheckNodeID("broker id", req.BrokerID); err != nil {
		return 0, nil, err
	}
	if no, hint := n.noController(); no {
		return wire.TypeBrokerRegister, &wire.BrokerRegisterResponse{Err: wire.NotController, ControllerID: hint}, nil
	}
	resp := n.ctrl.Register(ctx, req)
	return wire.TypeBrokerRegister, &resp, nil
}

func (n *Node) handleBrokerHeartbeat(ctx context.Context, peer quic.Peer, f quic.Frame) (quic.FrameType, any, error) {
	var req wire.BrokerHeartbeatRequest
	if err := f.Decode(&req); err != nil {
		return 0, nil, err
	}
	if err := peer.CheckNodeID("broker id", req.BrokerID); err != nil {
		return 0, nil, err
	}
	if no, hint := n.noController(); no {
		return wire.TypeBrokerHeartbeat, &wire.BrokerHeartbeatResponse{Err: wire.NotController, ControllerID: hint}, nil
	}
	resp := n.ctrl.Heartbeat(ctx, req)
	return wire.TypeBrokerHeartbeat, &resp, nil
}

func (n *Node) handleAlterPartition(ctx context.Context, peer quic.Peer, f quic.Frame) (quic.FrameType, any, error) {
	var req wire.AlterPartitionRequest
	if err := f.Decode(&req); err != nil {
		return 0, nil, err
	}
	if err := peer.CheckNodeID("broker id", req.BrokerID); err != nil {
		return 0, nil, err
	}
	if no, hint := n.noController(); no {
		return wire.TypeAlterPartition, &wire.AlterPartitionResponse{Err: wire.NotController, ControllerID: hint}, nil
	}
	resp := n.ctrl.AlterPartition(ctx, req)
	return wire.TypeAlterPartition, &resp, nil
}

func (n *Node) handleAllocateProducerIDs(ctx context.Context, peer quic.Peer, f quic.Frame) (quic.FrameType, any, error) {
	var req wire.AllocateProducerIDsRequest
	if err := f.Decode(&req); err != nil {
		return 0, nil, err
	}
	if err := peer.CheckNodeID("broker id", req.BrokerID); err != nil {
		return 0, nil, err
	}
	if no, hint := n.noController(); no {
		return wire.TypeAllocateProducerIDs, &wire.AllocateProducerIDsResponse{Err: wire.NotController, ControllerID: hint}, nil
	}
	resp := n.ctrl.AllocateProducerIDs(ctx, req)
	return wire.TypeAllocateProducerIDs, &resp, nil
}
