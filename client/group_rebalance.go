package client

import (
	"context"
	"fmt"
	"slices"
	"time"

	"paymentlog/wire"
)

// Poll's side of a GroupConsumer (group_consumer.go): it applies the
// assignment the heartbeats brought, releasing and starting partitions,
// and commits as the member.

// Poll applies the assignment changes the heartbeats brought (releases
// first: commit, stop fetching, OnRevoked, heartbeat at once; then starts:
// the committed offset or From, OnAssigned), then returns the next records
// of the partitions the member owns, as Consumer.Poll does. A change that
// arrives while it waits ends the wait: it returns no records and a nil
// error, and the next call applies it. With no partition it waits up to
// the Consumer's MaxWait for an assignment and returns nil, nil.
//
// Releasing a partition commits its position (the records Poll returned
// before count as processed; see GroupConsumerConfig.CommitAt), waiting up
// to a session timeout for the controller, whatever ctx says: a failed
// commit is logged, and the partition is released all the same (its next
// owner reads again from the last commit). A partition that cannot start
// (the controller does not answer for its committed offset) is logged and
// tried again at the next call. Errors are Consumer.Poll's, ctx's end, and
// a heartbeat refused for good (the member stopped; Close it).
//
// Call it at least every MaxPollInterval: a member that does not leaves
// the group (its partitions go to the others), and this call then releases
// every partition without committing and joins again.
func (g *GroupConsumer) Poll(ctx context.Context) ([]Message, error) {
	if g.closed {
		return nil, ErrGroupConsumerClosed
	}
	g.setPolling(true)
	defer g.setPolling(false)
	if err := g.rebalance(ctx); err != nil {
		return nil, err
	}
	if len(g.cons.order) == 0 {
		return nil, g.waitAssignment(ctx)
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g.setInterrupt(cancel)
	msgs, err := g.cons.Poll(pctx)
	g.setInterrupt(nil)
	if err != nil && pctx.Err() != nil && ctx.Err() == nil {
		return msgs, nil // ended by an assignment change: the next call applies it
	}
	return msgs, err
}

// setPolling records that Poll began (true) or returned (false): the
// heartbeats leave the group once it has not run for MaxPollInterval.
func (g *GroupConsumer) setPolling(on bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.mu.polling = on
	if !on {
		g.mu.lastPoll = time.Now()
	}
}

// setInterrupt makes an assignment change call cancel (nil: nothing); a
// change already pending calls it at once.
func (g *GroupConsumer) setInterrupt(cancel context.CancelFunc) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.mu.interrupt = cancel
	if cancel != nil && g.mu.pending {
		cancel()
	}
}

// waitAssignment waits up to MaxWait for an assignment change, or ctx's
// end (its error).
func (g *GroupConsumer) waitAssignment(ctx context.Context) error {
	t := time.NewTimer(g.cons.cfg.MaxWait)
	defer t.Stop()
	select {
	case <-g.notify:
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// rebalance releases what the member owns and is no longer assigned
// (everything, without committing, after its membership lapsed) and
// starts what it is assigned and does not read yet.
func (g *GroupConsumer) rebalance(ctx context.Context) error {
	select {
	case <-g.notify:
	default:
	}
	g.mu.Lock()
	g.mu.pending = false
	if err := g.mu.err; err != nil {
		g.mu.Unlock()
		return err
	}
	if !g.mu.expelled && g.lapsedLocked(time.Now()) {
		g.expelLocked(lapsedReason, "session_timeout", g.mu.session)
		g.mu.pending = false
	}
	lost := g.mu.expelled
	var release, start []TopicPartition
	for tp := range g.mu.owned {
		if lost || !g.mu.assigned[tp] {
			release = append(release, tp)
		}
	}
	for tp := range g.mu.assigned {
		if _, reading := g.cons.parts[tp]; !reading && !g.skipped[tp] {
			// Owned from now on: a heartbeat reports it until Poll
			// releases it, whether or not it starts.
			g.mu.owned[tp] = true
			start = append(start, tp)
		}
	}
	g.mu.Unlock()
	if len(release) > 0 || lost {
		g.release(ctx, release, lost)
	}
	if len(start) > 0 {
		g.start(ctx, start)
	}
	return nil
}

// release commits the partitions of tps Poll reads (unless lost: the
// membership lapsed), stops reading them, calls OnRevoked and reports them
// released (at once).
func (g *GroupConsumer) release(ctx context.Context, tps []TopicPartition, lost bool) {
	slices.SortFunc(tps, comparePartitions)
	var reading []TopicPartition
	for _, tp := range tps {
		if _, ok := g.cons.parts[tp]; ok {
			reading = append(reading, tp)
		}
	}
	if !lost && len(reading) > 0 {
		g.mu.Lock()
		limit := g.mu.session
		g.mu.Unlock()
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), limit)
		err := g.commit(cctx, reading)
		cancel()
		if err != nil {
			g.log.Warn("commit of released partitions failed: their next owner reads again from the last commit",
				"member", g.MemberID(), "partitions", reading, "err", err)
			if g.cfg.OnCommitError != nil {
				g.cfg.OnCommitError(reading, err)
			}
		}
	}
	g.cons.Unassign(reading)
	if len(reading) > 0 && g.cfg.OnRevoked != nil {
		g.cfg.OnRevoked(reading) // before the controller may give them to another
	}
	g.mu.Lock()
	for _, tp := range tps {
		delete(g.mu.owned, tp)
		delete(g.skipped, tp)
	}
	if lost {
		g.mu.expelled, g.mu.lost = false, "" // the heartbeats go on, reporting nothing owned
	}
	g.mu.Unlock()
	g.wakeHeartbeat()
	g.log.Debug("released group partitions", "member", g.MemberID(), "partitions", tps, "lost", lost)
}

// start starts tps at the group's committed offsets (From or FromTime
// where it has none) and calls OnAssigned, but for those Skip leaves out
// (owned, never started); on a failure it leaves them to the next Poll.
func (g *GroupConsumer) start(ctx context.Context, tps []TopicPartition) {
	slices.SortFunc(tps, comparePartitions)
	if g.cfg.Skip != nil {
		tps = slices.DeleteFunc(tps, func(tp TopicPartition) bool {
			if !g.cfg.Skip(tp) {
				return false
			}
			g.skipped[tp] = true
			return true
		})
		if len(tps) == 0 {
			return
		}
	}
	sctx, cancel := context.WithTimeout(ctx, g.c.cfg.RequestTimeout)
	defer cancel()
	from := g.cfg.From
	if !g.cfg.FromTime.IsZero() {
		from = SeekEnd // then moved to the time below
	}
	missing, err := g.cons.SeekCommitted(sctx, g.cfg.Group, tps, from)
	if err == nil && !g.cfg.FromTime.IsZero() && len(missing) > 0 {
		err = g.cons.AssignAtTime(sctx, missing, g.cfg.FromTime)
	}
	if err != nil {
		g.cons.Unassign(tps)
		if ctx.Err() == nil {
			g.log.Warn("could not start assigned partitions; trying again at the next poll",
				"member", g.MemberID(), "partitions", tps, "err", err)
		}
		return
	}
	g.log.Debug("started group partitions", "member", g.MemberID(), "partitions", tps)
	if g.cfg.OnAssigned != nil {
		g.cfg.OnAssigned(tps)
	}
}

// Commit commits, as the member, the position (or what CommitAt says) of
// every partition it reads whose position moved since it last committed
// it or started it; with nothing to commit it returns nil without a
// request. Call it once the records Poll returned are processed.
//
// Errors are Admin.CommitOffsets's, and: ErrMembershipLost (wrapped) when
// no heartbeat was answered for a session timeout (nothing is sent);
// wire.UnknownMemberID when the controller forgot the member and it could
// not join again within a session timeout (after a controller failover the
// member joins again at once, and the commit is sent again as the member
// it joined as); wire.InvalidRequest for a partition the group has
// meanwhile given to another member.
func (g *GroupConsumer) Commit(ctx context.Context) error {
	return g.commit(ctx, g.cons.Assignment())
}

// CommitOffsets commits, as the member, offsets of partitions it reads
// (as Consumer.CommitOffsets does: each the next offset to process; those
// equal to the last committed are left out). Errors are Commit's, and a
// partition the member does not read.
func (g *GroupConsumer) CommitOffsets(ctx context.Context, offsets map[TopicPartition]int64) error {
	if err := g.checkMember(); err != nil {
		return err
	}
	id := g.MemberID()
	err := g.cons.commitOffsets(ctx, g.cfg.Group, id, offsets)
	switch ErrorCode(err) {
	case wire.UnknownMemberID:
		// A controller that took over knows no member: the heartbeat
		// joins again with what the member owns, which it keeps, and
		// the commit goes again as that member (the controller checks
		// it still owns the partitions).
		if g.awaitHeartbeat(ctx) {
			if err2 := g.checkMember(); err2 != nil {
				return err2
			}
			err = g.cons.commitOffsets(ctx, g.cfg.Group, g.MemberID(), offsets)
		}
	case wire.FencedMemberEpoch:
		g.wakeHeartbeat() // it learns the same, and gives up its partitions
	}
	return err
}

// commit commits the positions of tps (CommitAt's offsets, when set).
func (g *GroupConsumer) commit(ctx context.Context, tps []TopicPartition) error {
	offsets := make(map[TopicPartition]int64, len(tps))
	for _, tp := range tps {
		pos, ok := g.cons.Position(tp)
		if !ok || pos < 0 {
			continue // a seek to resolve: nothing read
		}
		if g.cfg.CommitAt != nil {
			if pos, ok = g.cfg.CommitAt(tp, pos); !ok {
				continue
			}
		}
		offsets[tp] = pos
	}
	return g.CommitOffsets(ctx, offsets)
}

// checkMember is nil unless the member's heartbeats went unanswered for a
// session timeout, or were refused for good.
func (g *GroupConsumer) checkMember() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.mu.err != nil:
		return g.mu.err
	case g.mu.expelled:
		return fmt.Errorf("client: group %s: member %s: %s: %w", g.cfg.Group, g.mu.memberID, g.mu.lost, ErrMembershipLost)
	case g.lapsedLocked(time.Now()):
		return fmt.Errorf("client: group %s: member %s: %s (%v): %w", g.cfg.Group, g.mu.memberID, lapsedReason,
			g.mu.session, ErrMembershipLost)
	}
	return nil
}
