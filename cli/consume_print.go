package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"

	"paymentlog/client"
)

// recordSource is what consume prints from: the partitions it assigned
// itself (manualSource) or those its group gives it (memberSource).
type recordSource interface {
	// poll returns the next records, as Consumer.Poll does.
	poll(ctx context.Context) ([]client.Message, error)
	// pastGoal reports whether m lies past its partition's --exit-at-end
	// goal (false without --exit-at-end).
	pastGoal(m *client.Message) bool
	// atEnd reports whether --exit-at-end's goal is reached (false
	// without it).
	atEnd() bool
}

// printRecords prints what src returns until --max, --exit-at-end or an
// interrupt, committing to the group every --commit-interval (gc, nil
// without --group); cons is the Consumer src reads with (Seek for
// --on-truncation rewind).
func printRecords(ctx context.Context, opts consumeOptions, cons *client.Consumer, src recordSource, gc *groupCommitter,
	out *bufio.Writer, stderr io.Writer) error {
	var printed int64
	var line []byte
	for !src.atEnd() {
		// poll returns records with a nil error (an error met beside them
		// comes on the next call); printing whatever it returns before
		// looking at the error stays correct either way.
		msgs, err := src.poll(ctx)
		for i := range msgs {
			m := &msgs[i]
			if (opts.max > 0 && printed >= opts.max) || src.pastGoal(m) {
				gc.notPrinted(m) // past --max or the goal
				continue
			}
			if opts.json {
				line = appendConsumedJSON(line[:0], m)
			} else {
				line = append(append(line[:0], m.Value...), '\n')
			}
			if _, err := out.Write(line); err != nil {
				return fmt.Errorf("write output: %w", err)
			}
			printed++
		}
		if err := out.Flush(); err != nil {
			return fmt.Errorf("write output: %w", err)
		}
		if opts.max > 0 && printed >= opts.max {
			return nil
		}
		gc.commitEvery(ctx, stderr)
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			if opts.exitAtEnd || opts.max > 0 {
				return fmt.Errorf("interrupted after %d records", printed)
			}
			return nil
		}
		var lt *client.LogTruncatedError
		if errors.As(err, &lt) && opts.rewind {
			fmt.Fprintf(stderr, "paymentlog: consume %s: partition %d: log truncated: the leader's log parts from "+
				"the records printed at offset %d (position was %d); printing the leader's records from offset %d\n",
				opts.topic, lt.Partition, lt.DivergingEndOffset, lt.Position, lt.DivergingEndOffset)
			if err := cons.Seek(lt.TopicPartition, lt.DivergingEndOffset); err != nil {
				return fmt.Errorf("consume %s: %w", opts.topic, err)
			}
			gc.rewound(lt.Partition)
			continue
		}
		return pollError(opts, err)
	}
	return nil
}

// pollError is the command's error for err, a failed poll.
func pollError(opts consumeOptions, err error) error {
	var lt *client.LogTruncatedError
	if errors.As(err, &lt) {
		if opts.group != "" {
			// Its committed offsets win over --from.
			return fmt.Errorf("consume %s: partition %d: log truncated: the leader's log no longer has the records "+
				"of group %s from offset %d up to its position %d (rerun with --on-truncation rewind, or move the group "+
				"with group set-offsets %s %s --partition %d --to %d --execute)", opts.topic, lt.Partition, opts.group,
				lt.DivergingEndOffset, lt.Position, opts.group, opts.topic, lt.Partition, lt.DivergingEndOffset)
		}
		return fmt.Errorf("consume %s: partition %d: log truncated: the leader's log no longer has the records "+
			"printed from offset %d up to the position %d (rerun with --partition %d --from %d, or --on-truncation rewind)",
			opts.topic, lt.Partition, lt.DivergingEndOffset, lt.Position, lt.Partition, lt.DivergingEndOffset)
	}
	var oor *client.OffsetOutOfRangeError
	if errors.As(err, &oor) {
		return fmt.Errorf("consume %s: partition %d has offsets %d to %d; %d is outside them", opts.topic, oor.Partition, oor.Start, oor.End, oor.Requested)
	}
	return fmt.Errorf("consume %s: %w", opts.topic, err)
}
