package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"paymentlog/node/metadata"
	"paymentlog/wire"
)

// errorCode maps an error from submit or a decision to a wire code, message
// and controller hint.
func (c *Controller) errorCode(err error) (wire.ErrorCode, string, int32) {
	var we *wire.Error
	var nc *NotControllerError
	switch {
	case err == nil:
		return wire.None, "", c.cfg.NodeID
	case errors.As(err, &nc):
		return wire.NotController, err.Error(), nc.Leader
	case errors.As(err, &we):
		return we.Code, we.Message, c.cfg.NodeID
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return wire.Timeout, "controller: " + err.Error(), c.cfg.NodeID
	}
	return wire.Unknown, err.Error(), c.cfg.NodeID
}

// Register handles a BrokerRegisterRequest (see metadata.DecideRegister). The
// registration counts as the broker's first heartbeat; a broker-only node is
// added as a raft learner in the background.
func (c *Controller) Register(ctx context.Context, req wire.BrokerRegisterRequest) wire.BrokerRegisterResponse {
	ev := metadata.RegisterEvent{ID: req.BrokerID, Addr: req.Addr, Incarnation: req.Incarnation,
		ControllerEligible: req.ControllerEligible, NewStorage: req.NewStorage, UnsyncedLogs: req.UnsyncedLogs,
		EmptyReplicas: req.EmptyReplicas, TornReplicas: req.TornReplicas, MetadataVersion: req.MetadataVersion, Rack: req.Rack}
	_, err := c.submit(ctx, "register", func(img *metadata.Image) ([]metadata.Record, error) {
		recs, err := metadata.DecideRegister(img, ev)
		for _, r := range recs {
			if pc, ok := r.(metadata.PartitionChange); ok && len(pc.ISR) == 0 && slices.Contains(pc.Lost, ev.ID) {
				c.log.Warn("a partition's last in-sync replica came back with new storage and no other replica is known to hold its acknowledged records; "+
					"it stays offline until unclean.leader.election.enable=true on its topic accepts losing them",
					"topic", pc.Topic, "partition", pc.Partition, "broker", ev.ID, "replicas", pc.Replicas)
			}
		}
		return recs, err
	})
	code, msg, hint := c.errorCode(err)
	if err == nil {
		c.mu.Lock()
		c.mu.sessions.touch(req.BrokerID, req.Incarnation, c.cfg.Now())
		c.mu.Unlock()
		c.cfg.Raft.SetPeerAddr(uint64(req.BrokerID), req.Addr)
		if !req.ControllerEligible {
			c.kickLearners()
		}
	}
	return wire.BrokerRegisterResponse{Err: code, Message: msg, ControllerID: hint}
}

// Heartbeat handles a BrokerHeartbeatRequest: it refreshes the session, and
// unfences a caught-up broker or performs a controlled shutdown through the
// loop (see metadata.DecideHeartbeat). A heartbeat that changes nothing is
// answered at once from the current image.
func (c *Controller) Heartbeat(ctx context.Context, req wire.BrokerHeartbeatRequest) wire.BrokerHeartbeatResponse {
	if !c.active() {
		return wire.BrokerHeartbeatResponse{Err: wire.NotController, Fenced: true, ControllerID: c.leaderHint(),
			Message: "controller: not the active controller"}
	}
	ev := metadata.HeartbeatEvent{ID: req.BrokerID, Incarnation: req.Incarnation,
		MetadataOffset: req.MetadataOffset, WantShutdown: req.WantShutdown}
	img := c.cfg.Store.Image()
	b, ok := img.Broker(req.BrokerID)
	// A broker fenced before this heartbeat starts its answer tracking
	// afresh, also when this heartbeat unfences it.
	wasFenced := !ok || b.Fenced
	if ok && b.Incarnation == req.Incarnation {
		c.mu.Lock()
		c.mu.sessions.touch(req.BrokerID, req.Incarnation, c.cfg.Now())
		// A broker that names no metadata leader, or another one, is not
		// receiving this controller's log (nil: an older build, trusted).
		leaderOK := req.MetadataLeader == nil || *req.MetadataLeader == c.cfg.NodeID
		c.mu.sessions.reportApplied(req.BrokerID, req.Incarnation, req.MetadataOffset, img.Offset(), leaderOK)
		if req.WantShutdown && !b.Fenced {
			// Its leaderships go first to brokers that keep up with the
			// metadata log, as a fenced broker's do: one that lags would
			// not hear of its leadership for as long as it lags.
			keeping := c.keepingUpLocked(img, c.cfg.Now())
			ev.Favored = func(id int32) bool { return keeping[id] }
		}
		if b.Fenced {
			// Before this heartbeat may unfence it: answers it missed
			// while fenced must not fence it again the moment the unfence
			// commits (the check can run before answered below, which a
			// caller that gave up never reaches).
			c.mu.sessions.forgetAnswers(req.BrokerID)
		}
		c.mu.Unlock()
		if recs, err := metadata.DecideHeartbeat(img, ev); err == nil && len(recs) == 0 {
			r := metadata.HeartbeatResponse(img, ev)
			r.ControllerID = c.cfg.NodeID
			c.answered(req, r, wasFenced)
			return r
		}
	}
	img, err := c.submit(ctx, "heartbeat", func(m *metadata.Image) ([]metadata.Record, error) {
		return metadata.DecideHeartbeat(m, ev)
	})
	if err != nil {
		code, msg, hint := c.errorCode(err)
		return wire.BrokerHeartbeatResponse{Err: code, Message: msg, Fenced: true, ControllerID: hint}
	}
	r := metadata.HeartbeatResponse(img, ev)
	r.ControllerID = c.cfg.NodeID
	c.answered(req, r, wasFenced)
	return r
}

// answered tracks whether the broker confirms this controller's heartbeat
// answers (see sessions.unanswered).
func (c *Controller) answered(req wire.BrokerHeartbeatRequest, r wire.BrokerHeartbeatResponse, wasFenced bool) {
	if r.Err != wire.None {
		return
	}
	c.mu.Lock()
	c.mu.sessions.answered(req.BrokerID, req.Incarnation, req.Seq, req.AckedSeq, wasFenced || r.Fenced, c.cfg.Now())
	c.mu.Unlock()
}

// AlterPartition handles an ISR change from a partition leader (see
// metadata.DecideAlterPartition); the reply carries the committed state.
func (c *Controller) AlterPartition(ctx context.Context, req wire.AlterPartitionRequest) wire.AlterPartitionResponse {
	img, err := c.submit(ctx, "alter-partition", func(m *metadata.Image) ([]metadata.Record, error) {
		return metadata.DecideAlterPartition(m, req)
	})
	if err != nil {
		code, msg, hint := c.errorCode(err)
		return wire.AlterPartitionResponse{Err: code, Message: msg, ControllerID: hint}
	}
	r := metadata.AlterPartitionResponse(img, req)
	r.ControllerID = c.cfg.NodeID
	return r
}

// CreateTopic creates a topic once its records are committed (see
// metadata.DecideCreateTopic).
func (c *Controller) CreateTopic(ctx context.Context, req wire.CreateTopicRequest) wire.CreateTopicResponse {
	id := fmt.Sprintf("%016x%016x", c.cfg.Rand(), c.cfg.Rand())
	ev := metadata.CreateTopicEvent{Name: req.Name, ID: id, Partitions: req.Partitions,
		RF: req.ReplicationFactor, MinISR: req.MinISR, Configs: req.Configs, Seed: c.cfg.Rand()}
	img, err := c.submit(ctx, "create-topic", func(m *metadata.Image) ([]metadata.Record, error) {
		return metadata.DecideCreateTopic(m, ev)
	})
	code, msg, hint := c.errorCode(err)
	r := wire.CreateTopicResponse{Err: code, Message: msg, ControllerID: hint}
	if err == nil {
		r.TopicID = id
		if img != nil {
			r.MetadataOffset = int64(img.Offset())
		}
	}
	return r
}

// DeleteTopic deletes a topic once the record is committed.
func (c *Controller) DeleteTopic(ctx context.Context, req wire.DeleteTopicRequest) wire.DeleteTopicResponse {
	_, err := c.submit(ctx, "delete-topic", func(m *metadata.Image) ([]metadata.Record, error) {
		return metadata.DecideDeleteTopic(m, req.Name)
	})
	code, msg, hint := c.errorCode(err)
	return wire.DeleteTopicResponse{Err: code, Message: msg, ControllerID: hint}
}

// AllocateProducerIDBlock commits a block of producer ids for broker and
// returns it: ids [start, start+n) are the broker's alone. Errors are
// *wire.Error or *NotControllerError.
func (c *Controller) AllocateProducerIDBlock(ctx context.Context, broker int32) (start, n int64, err error) {
	var block metadata.ProducerIDBlock
	_, err = c.submit(ctx, "producer-ids", func(m *metadata.Image) ([]metadata.Record, error) {
		recs, err := metadata.DecideProducerIDs(m, broker, c.cfg.ProducerIDBlock)
		if err == nil {
			block = recs[0].(metadata.ProducerIDBlock)
		}
		return recs, err
	})
	if err != nil {
		return 0, 0, err
	}
	return block.Start, block.Len, nil
}

// AllocateProducerIDs handles an AllocateProducerIDsRequest (see
// AllocateProducerIDBlock).
func (c *Controller) AllocateProducerIDs(ctx context.Context, req wire.AllocateProducerIDsRequest) wire.AllocateProducerIDsResponse {
	start, n, err := c.AllocateProducerIDBlock(ctx, req.BrokerID)
	code, msg, hint := c.errorCode(err)
	return wire.AllocateProducerIDsResponse{Err: code, Message: msg, Start: start, Len: n, ControllerID: hint}
}

// Active reports whether this node is the active controller now.
func (c *Controller) Active() bool { return c.active() }
