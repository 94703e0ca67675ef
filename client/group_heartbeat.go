package client

import (
	"context"
	"fmt"
	"maps"
	"time"

	"paymentlog/wire"
)

// The GroupConsumer's heartbeats (group_consumer.go has the protocol):
// one goroutine sends them to the active controller and records the
// answers under mu; Poll applies them (group_rebalance.go).

// heartbeatRetry is how soon a heartbeat that failed (no controller
// answered in time) is sent again, at most.
const heartbeatRetry = 200 * time.Millisecond

// run heartbeats until ctx ends: every heartbeat interval of the last
// answer, at once when Poll released partitions or a commit found the
// member unknown (wake), and sooner after a failure.
func (g *GroupConsumer) run(ctx context.Context) {
	defer close(g.done)
	g.mu.Lock()
	timer := time.NewTimer(g.mu.interval)
	g.mu.Unlock()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-g.wake:
		}
		next, err := g.heartbeat(ctx, true)
		if err != nil && ctx.Err() == nil {
			g.log.Debug("group heartbeat failed", "member", g.MemberID(), "err", err)
		}
		timer.Reset(next)
	}
}

// heartbeat sends one heartbeat and records its answer; it returns when to
// send the next. bounded limits the attempt to a part of the session
// timeout (the join in NewGroupConsumer takes all of ctx).
func (g *GroupConsumer) heartbeat(ctx context.Context, bounded bool) (time.Duration, error) {
	req, wait := g.request(time.Now())
	if req == nil {
		return wait, nil
	}
	sent := time.Now()
	resp, err := g.send(ctx, req, bounded)
	return g.answered(req, sent, resp, err)
}

// request is the next heartbeat: the subscription on a join, and every
// partition the member owns or was assigned. nil while the member waits
// for Poll to release what it had after its membership lapsed, or is
// stopped by a refusal; then wait is when to look again.
func (g *GroupConsumer) request(now time.Time) (req *wire.GroupHeartbeatRequest, wait time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.mu.err != nil {
		return nil, time.Hour // Close ends it
	}
	if !g.mu.expelled && g.lapsedLocked(now) {
		g.expelLocked(lapsedReason, "session_timeout", g.mu.session)
	}
	if !g.mu.expelled && g.pollOverdueLocked(now) {
		// The application stopped polling: leave, so the group gives its
		// partitions to the others.
		g.expelLocked(overdueReason, "max_poll_interval", g.cfg.MaxPollInterval)
		return &wire.GroupHeartbeatRequest{Group: g.cfg.Group, MemberID: g.mu.memberID, MemberEpoch: wire.LeaveEpoch,
			ClientID: g.cfg.ClientID}, 0
	}
	if g.mu.expelled {
		return nil, g.mu.interval // Poll wakes it once it has released everything
	}
	owned := maps.Clone(g.mu.owned)
	maps.Copy(owned, g.mu.assigned) // the member owns a partition from the answer that assigns it
	req = &wire.GroupHeartbeatRequest{Group: g.cfg.Group, MemberID: g.mu.memberID, MemberEpoch: g.mu.epoch,
		ClientID: g.cfg.ClientID, Owned: groupPartitions(owned)}
	if req.MemberEpoch == wire.JoinEpoch {
		req.Topics, req.TopicPattern = g.cfg.Topics, g.cfg.TopicPattern
		req.RebalanceTimeoutMs = int32(g.cfg.MaxPollInterval.Milliseconds())
		req.InstanceID = g.cfg.InstanceID
	}
	return req, 0
}

// joinRetry is how often NewGroupConsumer tries its join again while
// another member holds its InstanceID.
const joinRetry = 500 * time.Millisecond

// join sends the first heartbeat, again while another member holds the
// InstanceID (until ctx ends: that member's session times out first, unless
// it runs).
func (g *GroupConsumer) join(ctx context.Context) error {
	for {
		_, err := g.heartbeat(ctx, false)
		if ErrorCode(err) != wire.UnreleasedInstanceID {
			return err
		}
		g.log.Info("another member holds this instance id: waiting for its session to time out", "instance", g.cfg.InstanceID, "err", err)
		g.mu.Lock()
		g.mu.err = nil // answered records the refusal as final
		g.mu.Unlock()
		t := time.NewTimer(joinRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (last: %w)", ctx.Err(), err)
		case <-t.C:
		}
	}
}

// pollOverdueLocked reports whether the application has not called Poll
// for MaxPollInterval.
func (g *GroupConsumer) pollOverdueLocked(now time.Time) bool {
	return !g.mu.polling && now.Sub(g.mu.lastPoll) > g.cfg.MaxPollInterval
}

// send sends req to the active controller, retrying NotController and
// failed calls within one attempt (Admin.toController); bounded limits the
// attempt to half a session timeout, and to the membership's lapse, so
// that a member whose controller does not answer notices the lapse then.
func (g *GroupConsumer) send(ctx context.Context, req *wire.GroupHeartbeatRequest, bounded bool) (wire.GroupHeartbeatResponse, error) {
	if bounded {
		g.mu.Lock()
		limit := min(g.c.cfg.RequestTimeout, g.mu.session/2, g.untilLapseLocked(time.Now()))
		g.mu.Unlock()
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	var resp wire.GroupHeartbeatResponse
	_, err := g.c.Admin().toController(ctx, "group heartbeat", wire.TypeGroupHeartbeat, req,
		func() any { resp = wire.GroupHeartbeatResponse{}; return &resp },
		func() (wire.ErrorCode, string) { return resp.Err, resp.Message })
	return resp, err
}

// answered records the answer to req (sent at sent) and returns when to
// send the next heartbeat: the answer's interval; at once after
// UnknownMemberID (to join again); soon after a failure.
func (g *GroupConsumer) answered(req *wire.GroupHeartbeatRequest, sent time.Time, resp wire.GroupHeartbeatResponse, err error) (time.Duration, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	code := ErrorCode(err)
	switch {
	case req.MemberEpoch == wire.LeaveEpoch:
		// Left for want of a Poll (answered or not: a membership the
		// controller still holds times out): once Poll has released
		// everything, the member joins again.
		g.mu.epoch = wire.JoinEpoch
		return g.mu.interval, err
	case err == nil:
		g.mu.memberID, g.mu.epoch, g.mu.lastOK = resp.MemberID, resp.MemberEpoch, sent
		if g.mu.answeredOK != nil {
			close(g.mu.answeredOK)
			g.mu.answeredOK = nil
		}
		g.mu.interval = durationMs(resp.HeartbeatIntervalMs, defaultGroupHeartbeatInterval)
		g.mu.session = durationMs(resp.SessionTimeoutMs, defaultGroupSessionTimeout)
		if g.mu.expelled {
			// Sent before the lapse: Poll is releasing everything; the
			// heartbeat after it learns the assignment anew.
			return g.mu.interval, nil
		}
		assigned := partitionSet(resp.Assigned)
		if !maps.Equal(assigned, g.mu.assigned) {
			g.log.Debug("group assignment changed", "member", g.mu.memberID, "epoch", resp.MemberEpoch,
				"assigned", sortedPartitions(assigned))
			g.mu.assigned = assigned
			g.signalLocked()
		}
		return g.mu.interval, nil
	case code == wire.FencedMemberEpoch:
		g.mu.epoch = wire.JoinEpoch
		if !g.mu.expelled {
			g.expelLocked(fencedReason+": "+err.Error(), "max_poll_interval", g.cfg.MaxPollInterval)
		}
		return g.mu.interval, err
	case code == wire.UnknownMemberID && req.MemberEpoch != wire.JoinEpoch:
		g.log.Info("the group's controller does not know this member (its session timed out, or the controller changed): joining again",
			"member", req.MemberID)
		g.mu.epoch = wire.JoinEpoch
		return 0, err
	case code != wire.Unknown && !code.Retriable():
		g.mu.err = fmt.Errorf("client: group %s: heartbeat refused: %w", g.cfg.Group, err)
		g.signalLocked()
		return time.Hour, err
	}
	return min(g.mu.interval, heartbeatRetry, g.untilLapseLocked(time.Now())), err
}

// lapsedLocked reports whether the member has partitions and no heartbeat
// sent in the last session timeout was answered.
func (g *GroupConsumer) lapsedLocked(now time.Time) bool {
	return len(g.mu.owned)+len(g.mu.assigned) > 0 && now.Sub(g.mu.lastOK) > g.mu.session
}

// untilLapseLocked is how long until the member's membership lapses if no
// heartbeat is answered meanwhile (at least 1 ms; an hour with no
// partition): the heartbeats look again then.
func (g *GroupConsumer) untilLapseLocked(now time.Time) time.Duration {
	if len(g.mu.owned)+len(g.mu.assigned) == 0 {
		return time.Hour
	}
	return max(g.mu.lastOK.Add(g.mu.session).Sub(now)+time.Millisecond, time.Millisecond)
}

// Why a membership was lost (expelLocked).
const (
	lapsedReason  = "no group heartbeat answered for a session timeout"
	overdueReason = "the application did not poll within the max poll interval: leaving the group"
	fencedReason  = "the controller fenced the member (it kept partitions it was told to release past its rebalance timeout, the max poll interval, or another process joined with its instance id)"
)

// expelLocked makes the member give up its partitions after its membership
// was lost for reason (logged with the key and value given): Poll
// releases them without committing.
func (g *GroupConsumer) expelLocked(reason, key string, value time.Duration) {
	g.log.Warn(reason+"; releasing every partition without committing", "member", g.mu.memberID, key, value)
	g.mu.expelled, g.mu.lost = true, reason
	g.mu.assigned = map[TopicPartition]bool{}
	g.signalLocked()
}

// signalLocked tells Poll the assignment changed: it ends the
// Consumer.Poll running and wakes a Poll waiting for partitions.
func (g *GroupConsumer) signalLocked() {
	g.mu.pending = true
	if g.mu.interrupt != nil {
		g.mu.interrupt()
	}
	select {
	case g.notify <- struct{}{}:
	default:
	}
}

// wakeHeartbeat makes the heartbeat goroutine send one at once.
// awaitHeartbeat wakes the heartbeat goroutine and waits, at most a
// session timeout (and within ctx), until a heartbeat is answered without
// error; it reports whether one was.
func (g *GroupConsumer) awaitHeartbeat(ctx context.Context) bool {
	g.mu.Lock()
	if g.mu.answeredOK == nil {
		g.mu.answeredOK = make(chan struct{})
	}
	ch, wait := g.mu.answeredOK, g.mu.session
	g.mu.Unlock()
	g.wakeHeartbeat()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

func (g *GroupConsumer) wakeHeartbeat() {
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// leave sends the heartbeat that leaves the group (for a while, with an
// InstanceID); the heartbeat goroutine has stopped.
func (g *GroupConsumer) leave(ctx context.Context) error {
	epoch := wire.LeaveEpoch
	if g.cfg.InstanceID != "" {
		epoch = wire.StaticLeaveEpoch
	}
	req := &wire.GroupHeartbeatRequest{Group: g.cfg.Group, MemberID: g.MemberID(), MemberEpoch: epoch, ClientID: g.cfg.ClientID}
	if _, err := g.send(ctx, req, true); err != nil {
		return fmt.Errorf("client: leave group %s: %w", g.cfg.Group, err)
	}
	return nil
}

// groupPartitions turns a set of partitions into the wire's per-topic
// sorted sets.
func groupPartitions(set map[TopicPartition]bool) []wire.GroupPartitions {
	out := []wire.GroupPartitions{}
	for _, tp := range sortedPartitions(set) {
		if len(out) == 0 || out[len(out)-1].Topic != tp.Topic {
			out = append(out, wire.GroupPartitions{Topic: tp.Topic})
		}
		last := &out[len(out)-1]
		last.Partitions = append(last.Partitions, tp.Partition)
	}
	return out
}

// partitionSet is the set of the partitions gps names.
func partitionSet(gps []wire.GroupPartitions) map[TopicPartition]bool {
	set := map[TopicPartition]bool{}
	for _, gp := range gps {
		for _, p := range gp.Partitions {
			set[TopicPartition{gp.Topic, p}] = true
		}
	}
	return set
}

// durationMs is ms milliseconds, or def when ms is not positive.
func durationMs(ms int32, def time.Duration) time.Duration {
	if ms <= 0 {
		return def
	}
	return time.Duration(ms) * time.Millisecond
}
