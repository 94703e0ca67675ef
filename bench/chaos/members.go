package chaos

import (
	"context"
	"errors"
	"fmt"
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
	Value     string
	At        time.Time
}

// startMembers joins cfg.Members consumers to MembersGroup, sharing the
// topic's partitions (client.GroupConsumer: the active controller assigns
// them, and moves them as members come and go or the controller changes).
// Each partition starts at the group's committed offset, else at 0.
func (w *Workload) startMembers(ctx context.Context, ccfg client.Config) error {
	for i := range w.cfg.Members {
		c, err := client.New(ctx, ccfg)
		if err != nil {
			return err
		}
		w.ccls = append(w.ccls, c)
		gc, err := c.NewGroupConsumer(ctx, client.GroupConsumerConfig{Group: MembersGroup, Topics: []string{w.cfg.Topic},
			ClientID: fmt.Sprintf("chaos-member-%d", i), From: 0})
		if err != nil {
			return fmt.Errorf("chaos: member %d: %w", i, err)
		}
		w.cwg.Add(1)
		go w.consumeAsMember(i, gc)
	}
	return nil
}

// consumeAsMember is one member's loop: it reads what it is assigned and
// commits every CommitInterval (and on every release, by itself).
func (w *Workload) consumeAsMember(id int, gc *client.GroupConsumer) {
	defer w.cwg.Done()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
		defer cancel()
		if err := gc.Close(ctx); err != nil {
			w.log.Warn("group member close", "member", id, "err", err)
		}
	}()
	lastCommit := time.Now()
	for w.cctx.Err() == nil {
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
		if len(msgs) > 0 {
			w.mu.Lock()
			for _, m := range msgs {
				w.mu.memberReads = append(w.mu.memberReads, MemberRead{Member: id, Partition: m.Partition, Offset: m.Offset, Value: string(m.Value), At: now})
				if m.Offset+1 > w.mu.memberPos[m.Partition] {
					w.mu.memberPos[m.Partition] = m.Offset + 1
				}
			}
			w.mu.Unlock()
		}
		if err != nil && w.cctx.Err() == nil {
			var lt *client.LogTruncatedError
			if errors.As(err, &lt) {
				w.log.Error("group member told its history was truncated", "member", id, "partition", lt.Partition)
			} else {
				w.log.Warn("group member poll failed", "member", id, "err", err)
			}
			w.pauseConsumer()
		}
	}
}

// Members is how many group members the workload runs.
func (w *Workload) Members() int { return max(w.cfg.Members, 0) }

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
