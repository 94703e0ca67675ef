package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"paymentlog/client"
)

// MembersGroup is the consumer group the workload's members share.
const MembersGroup = "chaos-members"

// MemberRead is one record a group member read.
type MemberRead struct {
	Member    int
	Partition int32
	Offset    int64
	Value     string // see LogRecord.Value
	At        time.Time
	Key       string // "": none
	Tombstone bool   // see LogRecord.Tombstone
}

// startMembers joins cfg.Members consumers to MembersGroup, sharing the
// topic's partitions (client.GroupConsumer: the active controller assigns
// them, and moves them as members come and go or the controller changes).
// Each partition starts at the group's committed offset, else at 0. Every
// member leaves after a while and joins again (member i after
// MemberLifetime × (1 + i/2)), so partitions are handed over all through
// the run, under whatever fault is in effect. Every third membership
// stalls halfway (its application stops polling, its heartbeats go on) for
// longer than its max poll interval, so the member leaves the group and
// the other takes its partitions, then polls again. Odd-numbered members
// are static (an instance id): their partitions wait a session timeout
// for them when they leave, and after dying they join again only once the
// controller has timed out their session.
func (w *Workload) startMembers(ctx context.Context, ccfg client.Config) error {
	for i := range w.cfg.Members {
		c, err := client.New(ctx, ccfg)
		if err != nil {
			return err
		}
		w.ccls = append(w.ccls, c)
		gc, err := w.join(ctx, c, i)
		if err != nil {
			return err
		}
		w.cwg.Add(1)
		go w.member(i, c, gc)
	}
	return nil
}

func (w *Workload) join(ctx context.Context, c *client.Client, id int) (*client.GroupConsumer, error) {
	instance := ""
	if id%2 == 1 {
		instance = fmt.Sprintf("chaos-member-%d", id)
	}
	gc, err := c.NewGroupConsumer(ctx, client.GroupConsumerConfig{Group: MembersGroup, Topics: []string{w.cfg.Topic},
		ClientID: fmt.Sprintf("chaos-member-%d", id), InstanceID: instance, From: 0, MaxPollInterval: memberMaxPoll})
	if err != nil {
		return nil, fmt.Errorf("chaos: member %d: %w", id, err)
	}
	return gc, nil
}

// member runs member id: one membership after another until the consumers
// stop. Every other membership ends by dying instead of leaving: its
// client is closed, so neither a last commit nor the leave reaches the
// cluster, and its partitions wait until the controller forgets it (the
// session timeout), then go to the other member at the last commit.
func (w *Workload) member(id int, c *client.Client, gc *client.GroupConsumer) {
	defer w.cwg.Done()
	lifetime := w.cfg.MemberLifetime + time.Duration(id)*w.cfg.MemberLifetime/2
	for k := 1; ; k++ {
		if k%3 == 0 {
			w.consumeAsMember(id, gc, time.Now().Add(lifetime/2))
			w.stall(id, gc)
			w.consumeAsMember(id, gc, time.Now().Add(lifetime/2))
		} else {
			w.consumeAsMember(id, gc, time.Now().Add(lifetime))
		}
		ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
		die := k%2 == 0 && w.cctx.Err() == nil
		if die {
			c.Close(ctx)
		}
		if err := gc.Close(ctx); err != nil && !die {
			w.log.Warn("group member close", "member", id, "err", err)
		}
		cancel()
		if w.cctx.Err() != nil {
			return
		}
		for {
			var err error
			ctx, cancel := context.WithTimeout(w.cctx, commitTimeout)
			if die {
				if c, err = client.New(ctx, w.ccfg); err == nil {
					w.mu.Lock()
					w.mu.memberClients = append(w.mu.memberClients, c)
					w.mu.Unlock()
					die = false
				}
			}
			if err == nil {
				gc, err = w.join(ctx, c, id)
			}
			cancel()
			if err == nil {
				break
			}
			if w.cctx.Err() != nil {
				return
			}
			w.log.Warn("group member could not join again", "member", id, "err", err)
			w.pauseConsumer()
		}
		w.mu.Lock()
		w.mu.memberJoins++
		if k%2 == 0 {
			w.mu.memberDeaths++
		}
		w.mu.Unlock()
	}
}

// memberMaxPoll is the members' max poll interval (longer than a commit
// between two polls may take), and memberStall how long a stalled member
// does not poll: past the interval by more than a heartbeat interval and
// a heartbeat's longest attempt (half a session), so the member has left
// the group by the end of it.
const (
	memberMaxPoll = commitTimeout + 2*time.Second
	memberStall   = memberMaxPoll + 7*time.Second
)

// stall stops polling member id for memberStall (its heartbeats go on),
// then checks that it left the group: its commit is refused as a lost
// membership.
func (w *Workload) stall(id int, gc *client.GroupConsumer) {
	t := time.NewTimer(memberStall)
	defer t.Stop()
	select {
	case <-w.cctx.Done():
		return
	case <-t.C:
	}
	ctx, cancel := context.WithTimeout(w.cctx, commitTimeout)
	err := gc.Commit(ctx)
	cancel()
	left := errors.Is(err, client.ErrMembershipLost)
	if !left && w.cctx.Err() == nil {
		w.log.Warn("group member stalled past its max poll interval and still held its membership", "member", id, "err", err)
	}
	w.mu.Lock()
	w.mu.memberStalls++
	if left {
		w.mu.stallsLeft++
	}
	w.mu.Unlock()
}

// consumeAsMember is one membership's loop until until (or the consumers
// stop): it reads what it is assigned and commits every CommitInterval (and
// on every release, by itself).
func (w *Workload) consumeAsMember(id int, gc *client.GroupConsumer, until time.Time) {
	lastCommit := time.Now()
	for w.cctx.Err() == nil && time.Now().Before(until) {
		if time.Since(lastCommit) >= w.cfg.CommitInterval {
			ctx, cancel := context.WithTimeout(w.cctx, commitTimeout)
			if err := gc.Commit(ctx); err != nil && w.cctx.Err() == nil {
				w.log.Warn("group member commit failed", "member", id, "err", err)
			}
			cancel()
			lastCommit = time.Now()
		}
		msgs, err := gc.Poll(w.cctx)
		now := time.Now()
		if len(msgs) > 0 || w.cfg.Keys > 0 {
			w.mu.Lock()
			for _, m := range msgs {
				k, v, tomb := storedValue(m.Key, m.Value, m.Headers)
				w.mu.memberReads = append(w.mu.memberReads, MemberRead{Member: id, Partition: m.Partition, Offset: m.Offset, Value: v, At: now, Key: k, Tombstone: tomb})
				if m.Offset+1 > w.mu.memberPos[m.Partition] {
					w.mu.memberPos[m.Partition] = m.Offset + 1
				}
			}
			if w.cfg.Keys > 0 {
				w.movePositions(w.mu.memberPos, gc.Consumer()) // as in consume
			}
			w.mu.Unlock()
		}
		if err != nil && w.cctx.Err() == nil {
			var lt *client.LogTruncatedError
			if errors.As(err, &lt) {
				w.log.Error("group member told its history was truncated", "member", id, "partition", lt.Partition, "position", lt.Position,
					"epoch", lt.LastFetchedEpoch, "diverging_epoch", lt.DivergingEpoch, "offset", lt.DivergingEndOffset)
				d := Divergence{Consumer: id, Partition: lt.Partition, Position: lt.Position, LastFetchedEpoch: lt.LastFetchedEpoch,
					DivergingEpoch: lt.DivergingEpoch, DivergingEndOffset: lt.DivergingEndOffset, At: now}
				w.mu.Lock()
				w.mu.memberCut[lt.Partition] = true
				if !slices.ContainsFunc(w.mu.memberDivs, func(o Divergence) bool {
					return o.Consumer == id && o.Partition == d.Partition && o.Position == d.Position
				}) {
					w.mu.memberDivs = append(w.mu.memberDivs, d)
				}
				w.mu.Unlock()
			} else {
				w.log.Warn("group member poll failed", "member", id, "err", err)
			}
			w.pauseConsumer()
		}
	}
}

// Members is how many group members the workload runs.
func (w *Workload) Members() int { return max(w.cfg.Members, 0) }

// MemberStalls is how many times a member stalled past its max poll
// interval, and after how many of those it found it had left the group.
func (w *Workload) MemberStalls() (stalls, left int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mu.memberStalls, w.mu.stallsLeft
}

// MemberRejoins is how many times a member left and joined again, and how
// many of those times it died instead of leaving.
func (w *Workload) MemberRejoins() (rejoins, deaths int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mu.memberJoins, w.mu.memberDeaths
}

// MemberReads returns a copy of every record the members read.
func (w *Workload) MemberReads() []MemberRead {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]MemberRead(nil), w.mu.memberReads...)
}

// MemberPositions returns, per partition, the offset after the highest one
// any member read.
func (w *Workload) MemberPositions() map[int32]int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[int32]int64, len(w.mu.memberPos))
	for p, o := range w.mu.memberPos {
		out[p] = o
	}
	return out
}

// MemberDivergences returns every log truncation a member was told of
// (Divergence.Consumer: the member), one per member, partition and
// position.
func (w *Workload) MemberDivergences() []Divergence {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Divergence(nil), w.mu.memberDivs...)
}

// MemberTruncated returns the partitions in which a member was told that
// records it had read were truncated: members read no further there, so
// the run does not wait for them to reach the final HW.
func (w *Workload) MemberTruncated() map[int32]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[int32]bool, len(w.mu.memberCut))
	for p := range w.mu.memberCut {
		out[p] = true
	}
	return out
}
