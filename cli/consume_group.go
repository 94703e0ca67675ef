package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"time"

	"paymentlog/client"
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
// --exit-at-end goal), whose commits stop at that record. A nil
// *groupCommitter (no --group) does nothing.
type groupCommitter struct {
	cons     *client.Consumer
	group    string
	topic    string
	interval time.Duration // 0: only at exit
	last     time.Time     // of the last periodic commit (or the start)
	// held is, by partition, the first record returned but not printed.
	// Invariant: every record of the partition returned from it on was not
	// printed either (the later ones are past --max or the goal too).
	held map[int32]int64
}

func newGroupCommitter(cons *client.Consumer, opts consumeOptions) *groupCommitter {
	return &groupCommitter{cons: cons, group: opts.group, topic: opts.topic, interval: opts.commitInterval,
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
// rewind): its records from there on are printed again.
func (g *groupCommitter) rewound(p int32) {
	if g != nil {
		delete(g.held, p)
	}
}

// offsets are the offsets to commit for tps: after the last record printed.
func (g *groupCommitter) offsets(tps []client.TopicPartition) map[client.TopicPartition]int64 {
	offs := make(map[client.TopicPartition]int64, len(tps))
	for _, tp := range tps {
		if h, ok := g.held[tp.Partition]; ok {
			offs[tp] = h
		} else if pos, ok := g.cons.Position(tp); ok && pos >= 0 {
			offs[tp] = pos // every record returned was printed
		}
	}
	return offs
}

// commit commits what moved since the last commit.
func (g *groupCommitter) commit(ctx context.Context, tps []client.TopicPartition) error {
	ctx, cancel := context.WithTimeout(ctx, groupCommitTimeout)
	defer cancel()
	if err := g.cons.CommitOffsets(ctx, g.group, g.offsets(tps)); err != nil {
		return fmt.Errorf("consume %s: commit offsets of group %s: %w", g.topic, g.group, err)
	}
	return nil
}

// commitEvery commits when --commit-interval has passed since the last
// periodic commit, and reports a failure on stderr (the next one retries).
// Call it with the records returned so far printed and flushed.
func (g *groupCommitter) commitEvery(ctx context.Context, tps []client.TopicPartition, stderr io.Writer) {
	if g == nil || g.interval <= 0 || time.Since(g.last) < g.interval || ctx.Err() != nil {
		return
	}
	g.last = time.Now()
	if err := g.commit(ctx, tps); err != nil && ctx.Err() == nil {
		fmt.Fprintf(stderr, "paymentlog: %v\n", err)
	}
}

// commitAtExit flushes out and commits, with its own timeout (ctx may be
// the interrupted one), and returns the command's error: err, else the
// commit's failure. A commit failure beside err goes to stderr. When the
// output cannot be flushed the records in it may not have been printed:
// nothing is committed, the last commit stands.
func (g *groupCommitter) commitAtExit(ctx context.Context, out *bufio.Writer, tps []client.TopicPartition, err error, stderr io.Writer) error {
	if ferr := out.Flush(); ferr != nil {
		if err == nil {
			err = fmt.Errorf("write output: %w", ferr)
		}
		return err
	}
	cerr := g.commit(context.WithoutCancel(ctx), tps)
	switch {
	case cerr == nil:
		return err
	case err == nil:
		return cerr
	}
	fmt.Fprintf(stderr, "paymentlog: %v\n", cerr)
	return err
}
