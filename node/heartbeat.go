package node

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"time"

	"paymentlog/node/metadata"
	"paymentlog/segment"
	"paymentlog/wire"
)

// heartbeatLoop registers this broker with the active controller and then
// heartbeats every HeartbeatInterval, reporting how far it has applied the
// metadata log. A broker that cannot reach a controller for two session
// timeouts fences itself (stops accepting writes), because the controller will
// have fenced it and moved its leaderships; it unfences when a heartbeat
// succeeds and the controller says it is not fenced.
func (n *Node) heartbeatLoop(ctx context.Context) error {
	t := time.NewTicker(n.cfg.HeartbeatInterval)
	defer t.Stop()
	n.mu.Lock()
	n.mu.lastHB = time.Now()
	n.mu.fenced = true
	n.mu.Unlock()
	n.broker.SetFenced(true)
	// Heartbeats go out on the ticker without waiting for the previous
	// answer (at most two outstanding), so one slow round trip under CPU
	// contention does not also delay the next heartbeat; answers older than
	// one already applied are ignored (see heartbeatOnce).
	slots := make(chan struct{}, 2)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		// A stalled disk (diskstall.go), a full one (diskfull.go), or a test.
		stalled := n.diskStalled()
		full := n.holdHeartbeats()
		// Aside for its disk, it does not lead the metadata quorum either (diskstall_raft.go).
		n.handOffControllerWhileAside(stalled || full)
		if full || stalled || (n.cfg.heartbeatHold != nil && n.cfg.heartbeatHold()) {
			n.checkSelfFence()
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
			continue
		}
		select {
		case slots <- struct{}{}:
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-slots }()
				n.heartbeatOnce(ctx, false)
			}()
		default:
			n.checkSelfFence()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// heartbeatOnce registers if needed and sends one heartbeat. It returns the
// controller's answer (zero value on failure).
func (n *Node) heartbeatOnce(ctx context.Context, wantShutdown bool) (wire.BrokerHeartbeatResponse, bool) {
	n.mu.Lock()
	registered, newStorage := n.mu.registered, n.mu.newStorage
	n.mu.Unlock()
	var empty, torn []wire.PartitionRef
	if !registered && !newStorage { // (with new storage every partition is empty)
		var ok bool
		if empty, torn, ok = n.emptyReplicas(ctx); !ok {
			return wire.BrokerHeartbeatResponse{}, false
		}
	}
	hctx, cancel := context.WithTimeout(ctx, n.cfg.SessionTimeout/2)
	defer cancel()
	n.mu.Lock()
	n.mu.hbSeq++
	seq, acked := n.mu.hbSeq, n.mu.hbAcked
	n.mu.Unlock()
	if !registered {
		var resp wire.BrokerRegisterResponse
		err := n.callController(hctx, wire.TypeBrokerRegister, wire.BrokerRegisterRequest{
			BrokerID:           n.cfg.ID,
			Addr:               n.ep.Addr(),
			Incarnation:        n.incarnation,
			ControllerEligible: n.cfg.ControllerEligible(),
			NewStorage:         newStorage,
			UnsyncedLogs:       n.cfg.Sync != segment.SyncAlways,
			EmptyReplicas:      empty,
			TornReplicas:       torn,
			MetadataVersion:    metadata.MetadataVersion,
			Rack:               n.cfg.Rack,
		}, &resp, func() wire.ErrorCode { return resp.Err })
		if err != nil {
			var we *wire.Error
			stale := errors.As(err, &we) && we.Code == wire.StaleBrokerEpoch
			n.mu.Lock()
			first := stale && !n.mu.staleReg
			n.mu.staleReg = stale
			n.mu.Unlock()
			if first {
				// Our incarnation is older than the registered one: the
				// clock stepped back and the data directory (which records
				// the last incarnation) was replaced. Retried until the
				// clock passes the registered incarnation.
				n.log.Error("registration refused: incarnation older than the registered one; retrying", "incarnation", n.incarnation, "err", err)
			} else {
				n.log.Debug("register failed", "err", err)
			}
			n.checkSelfFence()
			return wire.BrokerHeartbeatResponse{}, false
		}
		n.log.Info("registered with controller", "new_storage", newStorage, "empty_replicas", len(empty))
		if err := n.broker.Registered(); err != nil {
			n.log.Warn("removing the empty-replica marks", "err", err)
		}
		n.mu.Lock()
		n.mu.registered = true
		n.mu.newStorage = false
		n.mu.Unlock()
		if newStorage {
			// Synced: a marker back after a power cut would say so once
			// more, when this broker may have rejoined ISRs by fetching
			// everything, and take it out of them again (as the last
			// member, leaving its partition offline).
			if err := os.Remove(filepath.Join(n.cfg.DataDir, NewStorageFile)); err != nil && !os.IsNotExist(err) {
				n.log.Warn("removing the new-storage marker", "err", err)
			} else if err := (segment.OSFS{}).SyncDir(n.cfg.DataDir); err != nil {
				n.log.Warn("removing the new-storage marker", "err", err)
			}
		}
	}
	var resp wire.BrokerHeartbeatResponse
	lead := int32(n.raft.FollowedLeader())
	err := n.callController(hctx, wire.TypeBrokerHeartbeat, wire.BrokerHeartbeatRequest{
		BrokerID:       n.cfg.ID,
		Incarnation:    n.incarnation,
		MetadataOffset: int64(n.store.Image().Offset()),
		WantShutdown:   wantShutdown,
		// The controller fences a broker whose heartbeats arrive while it
		// confirms none of the answers (it can send but not receive).
		Seq:      int64(seq),
		AckedSeq: int64(acked),
		// And one whose raft follows no leader, or another, for as long:
		// it does not receive the metadata log (it gets no leadership
		// meanwhile).
		MetadataLeader: &lead,
	}, &resp, func() wire.ErrorCode { return resp.Err })
	if err != nil {
		var we *wire.Error
		if errors.As(err, &we) && (we.Code == wire.StaleBrokerEpoch || we.Code == wire.BrokerNotAvailable) {
			n.mu.Lock()
			n.mu.registered = false
			n.mu.Unlock()
		}
		n.log.Debug("heartbeat failed", "err", err)
		n.checkSelfFence()
		return resp, false
	}
	n.mu.Lock()
	n.mu.lastHB = time.Now()
	n.mu.ctrlContact = n.mu.lastHB
	n.mu.hbAcked = max(n.mu.hbAcked, seq)
	if seq < n.mu.hbApplied {
		// A newer heartbeat's answer was applied already.
		n.mu.Unlock()
		return resp, true
	}
	n.mu.hbApplied = seq
	changed := n.mu.fenced != resp.Fenced
	n.mu.fenced = resp.Fenced
	n.mu.Unlock()
	if changed {
		n.log.Info("fence state changed", "fenced", resp.Fenced)
		n.broker.SetFenced(resp.Fenced)
	}
	return resp, true
}

// checkSelfFence fences this broker when no heartbeat has succeeded for two
// session timeouts. By then the controller has fenced it and moved its
// leaderships if a controller is there at all; waiting two timeouts rather
// than one keeps a controller failover (an election plus the new
// controller's grace period) from stopping writes on every healthy leader.
func (n *Node) checkSelfFence() {
	n.mu.Lock()
	expired := time.Since(n.mu.lastHB) > 2*n.cfg.SessionTimeout
	changed := expired && !n.mu.fenced
	if changed {
		n.mu.fenced = true
	}
	n.mu.Unlock()
	if changed {
		n.log.Warn("no controller contact for a session timeout: fencing myself")
		n.broker.SetFenced(true)
	}
}

// localLogWait is how long one registration attempt waits for the local
// metadata log to be applied (emptyReplicas) before it gives up, warns,
// and leaves it to the next attempt; applying it takes milliseconds.
const localLogWait = 5 * time.Second

// emptyReplicas lists the partitions this node's metadata image assigns to
// it whose logs hold nothing from before this process (broker.HoldsNothing):
// its registration names them (wire.BrokerRegisterRequest.EmptyReplicas).
// It first waits, up to localLogWait, until the metadata log on disk at
// start is applied; false if it is not by then. Before, the image may not
// show every assignment, and a registration that did not name a partition
// whose log was lost could see that replica elected with nothing: the node
// stays unregistered (and fenced) instead.
//
// torn lists those whose logs, opened by this process, truncated a damaged
// tail (broker.TornAtOpen): it waits, within the same bound, until the
// watcher has reconciled the image applied by then (opening every log it
// assigns).
func (n *Node) emptyReplicas(ctx context.Context) (empty, torn []wire.PartitionRef, ok bool) {
	wctx, cancel := context.WithTimeout(ctx, localLogWait)
	defer cancel()
	err := n.raft.WaitApplied(wctx, n.startCommit)
	// The image's offset, not startCommit: raft entries that are not
	// metadata (a new leader's empty entry, a conf change) leave it
	// behind the raft index, and may end the log.
	for target := n.store.Image().Offset(); err == nil && n.reconciledOffset() < target; {
		select {
		case <-wctx.Done():
			err = wctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err != nil {
		if ctx.Err() == nil {
			n.log.Warn("not registering yet: the metadata log on disk is not applied, and a registration now could not name the partitions whose logs are lost",
				"applied", n.raft.Status().Applied, "commit_at_start", n.startCommit, "waited", localLogWait)
		}
		return nil, nil, false
	}
	img := n.store.Image()
	n.mu.Lock()
	cached, cachedTorn, at := n.mu.empty, n.mu.torn, n.mu.emptyAt
	n.mu.Unlock()
	if at != 0 && at == img.Offset() {
		// A retry: a log found before holds what it held, and one found
		// empty stays marked until a registration is accepted.
		return cached, cachedTorn, true
	}
	for _, t := range img.Topics() {
		for _, p := range t.Partitions {
			if !p.HasReplica(n.cfg.ID) {
				continue
			}
			ref := wire.PartitionRef{TopicID: p.TopicID, Partition: p.Partition}
			if n.broker.HoldsNothing(p.Topic, p.TopicID, p.Partition) {
				empty = append(empty, ref)
			} else if n.broker.TornAtOpen(p.Topic, p.TopicID, p.Partition) {
				torn = append(torn, ref)
			}
		}
	}
	n.mu.Lock()
	n.mu.empty, n.mu.torn, n.mu.emptyAt = empty, torn, img.Offset()
	n.mu.Unlock()
	return empty, torn, true
}

// reconciledOffset is the offset of the last image the watcher reconciled.
func (n *Node) reconciledOffset() uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.mu.reconciled
}
