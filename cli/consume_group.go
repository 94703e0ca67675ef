package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"time"

	"paymentlog/client"
	"paymentlog/wire"
)

// defaultCommitInterval is consume --commit-interval's default.
const defaultCommitInterval = 5 * time.Second

// groupCommitTimeout bounds one commit of consume --group: a periodic one
// holds the records back while it waits (the controller being elected),
// and the one at exit runs after the command was interrupted.
const groupCommitTimeout = 10 * time.Second

// groupCommitter commits, for consume --group, the offset after the last
// record printed on each partition: the consumer's position, except on a
// partition where a record was returned but not printed (past --max or the
// --exit-at-end goal), whose commits stop at that record. As a member
// (member set) it commits through the GroupConsumer, whose own commits (of
// partitions it releases, at Close) ask commitAt too; otherwise as no
// member, which the cluster refuses while the group has members. A nil
// *groupCommitter (no --group) does nothing.
type groupCommitter struct {
	cons     *client.Consumer      // without membership
	member   *client.GroupConsumer // as a member
	group    string
	topic    string
	interval time.Duration // 0: only at exit
	last     time.Time     // of the last periodic commit (or the start)
	// held is, by partition, the first record returned but not printed.
	// Invariant: every record of the partition returned from it on was not
	// printed either (the later ones are past --max or the goal too).
	held map[int32]int64
	// frozen: the output could not be flushed, so the records in it may
	// not have been printed: nothing more is committed.
	frozen bool
}

func newGroupCommitter(opts consumeOptions) *groupCommitter {
	return &groupCommitter{group: opts.group, topic: opts.topic, interval: opts.commitInterval,
		last: time.Now(), held: map[int32]int64{}}
}

// notPrinted records that m was returned but not printed.
func (g *groupCommitter) notPrinted(m *client.Message) {
	if g == nil {
		return
	}
	if _, ok := g.held[m.Partition]; !ok {
		g.held[m.Partition] = m.Offset
	}
}

// rewound records that partition p was sought back (--on-truncation
// rewind): its records from there on are printed again. A partition
// released to another member is forgotten the same way.
func (g *groupCommitter) rewound(p int32) {
	if g != nil {
		delete(g.held, p)
	}
}

// commitAt is the offset to commit for tp at position pos: after the last
// record printed (client.GroupConsumerConfig.CommitAt).
func (g *groupCommitter) commitAt(tp client.TopicPartition, pos int64) (int64, bool) {
	if g.frozen {
		return 0, false
	}
	if h, ok := g.held[tp.Partition]; ok {
		return h, true
	}
	return pos, pos >= 0 // every record returned was printed
}

// commit commits what moved since the last commit.
func (g *groupCommitter) commit(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, groupCommitTimeout)
	defer cancel()
	var err error
	if g.member != nil {
		err = g.member.Commit(ctx)
	} else {
		offs := map[client.TopicPartition]int64{}
		for _, tp := range g.cons.Assignment() {
			pos, _ := g.cons.Position(tp)
			if o, ok := g.commitAt(tp, pos); ok {
				offs[tp] = o
			}
		}
		err = g.cons.CommitOffsets(ctx, g.group, offs)
	}
	switch {
	case err == nil:
		return nil
	case client.ErrorCode(err) == wire.NonEmptyGroup:
		return fmt.Errorf("consume %s: commit offsets of group %s: refused: the group has members (consume --group %s "+
			"without --partition), and only they commit its offsets; use another group, or stop them first (%w)",
			g.topic, g.group, g.group, err)
	}
	return fmt.Errorf("consume %s: commit offsets of group %s: %w", g.topic, g.group, err)
}

// commitEvery commits when --commit-interval has passed since the last
// periodic commit, and reports a failure on stderr (the next one retries).
// Call it with the records returned so far printed and flushed.
func (g *groupCommitter) commitEvery(ctx context.Context, stderr io.Writer) {
	if g == nil || g.interval <= 0 || time.Since(g.last) < g.interval || ctx.Err() != nil {
		return
	}
	g.last = time.Now()
	if err := g.commit(ctx); err != nil && ctx.Err() == nil {
		fmt.Fprintf(stderr, "paymentlog: %v\n", err)
	}
}

// commitAtExit flushes out and commits, with its own timeout (ctx may be
// the interrupted one), and returns the command's error: err, else the
// commit's failure. A commit failure beside err goes to stderr. When the
// output cannot be flushed the records in it may not have been printed:
// nothing is committed, the last commit stands.
func (g *groupCommitter) commitAtExit(ctx context.Context, out *bufio.Writer, err error, stderr io.Writer) error {
	if ferr := out.Flush(); ferr != nil {
		g.frozen = true
		if err == nil {
			err = fmt.Errorf("write output: %w", ferr)
		}
		return err
	}
	cerr := g.commit(context.WithoutCancel(ctx))
	switch {
	case cerr == nil:
		return err
	case err == nil:
		return cerr
	}
	fmt.Fprintf(stderr, "paymentlog: %v\n", cerr)
	return err
}
