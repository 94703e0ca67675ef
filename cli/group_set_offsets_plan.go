package cli

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"paymentlog/client"
	"paymentlog/wire"
)

// setOffsetsPlan is what `group set-offsets` commits (or, with --dry-run,
// would commit), sorted by topic and partition, and what it tells the
// operator about it on stderr.
type setOffsetsPlan struct {
	offsets []wire.GroupOffset
	notes   []string
}

// planSetOffsets turns the options into an offset for each partition
// chosen, asking the leaders for the offsets it depends on (ListOffsets).
// before are the group's committed offsets of those topics.
func planSetOffsets(ctx context.Context, a *client.Admin, opts groupSetOffsetsOptions, before []wire.GroupOffset) (setOffsetsPlan, error) {
	switch {
	case opts.file != nil:
		return planFromFile(ctx, a, opts.file)
	case opts.shifting:
		return planShift(ctx, a, opts, before)
	}
	offs, err := resolveSetOffsets(ctx, a, opts)
	return setOffsetsPlan{offsets: offs}, err
}

// resolveSetOffsets turns --to into an offset for each partition chosen.
func resolveSetOffsets(ctx context.Context, a *client.Admin, opts groupSetOffsetsOptions) ([]wire.GroupOffset, error) {
	timed, explicit := !opts.toTime.IsZero(), opts.toTime.IsZero() && opts.to >= 0
	at := opts.to
	switch {
	case timed:
		at = opts.toTime.UnixMilli()
	case explicit:
		at = client.SeekEnd // OFFSET must lie between the log start and the end
	}
	offs, err := a.ListOffsets(ctx, opts.topic, at)
	if err != nil {
		return nil, err
	}
	parts, err := choosePartitions(offs, opts.partition)
	if err != nil {
		return nil, err
	}
	switch {
	case timed && slices.ContainsFunc(parts, func(p int32) bool { return offs[p] < 0 }):
		// No record stamped at or after the time yet: the ones produced
		// from now on are.
		ends, err := a.ListOffsets(ctx, opts.topic, client.SeekEnd)
		if err != nil {
			return nil, err
		}
		for _, p := range parts {
			if offs[p] < 0 {
				offs[p] = ends[p]
			}
		}
	case explicit:
		starts, err := a.ListOffsets(ctx, opts.topic, client.SeekBeginning)
		if err != nil {
			return nil, err
		}
		for _, p := range parts {
			if opts.to < starts[p] || opts.to > offs[p] {
				return nil, fmt.Errorf("partition %d has offsets %d to %d; %d is outside them", p, starts[p], offs[p], opts.to)
			}
			offs[p] = opts.to
		}
	}
	out := make([]wire.GroupOffset, 0, len(parts))
	for _, p := range parts {
		out = append(out, wire.GroupOffset{Topic: opts.topic, Partition: p, Offset: offs[p], LeaderEpoch: -1})
	}
	return out, nil
}

// choosePartitions returns the partitions of offs that only (-1: every
// one) selects, sorted.
func choosePartitions(offs map[int32]int64, only int32) ([]int32, error) {
	var parts []int32
	for p := range offs {
		if only < 0 || p == only {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("topic has %d partitions; no partition %d", len(offs), only)
	}
	slices.Sort(parts)
	return parts, nil
}

// topicRange is every partition's log start and high watermark.
type topicRange struct{ starts, ends map[int32]int64 }

func listRange(ctx context.Context, a *client.Admin, topic string) (topicRange, error) {
	starts, err := a.ListOffsets(ctx, topic, client.SeekBeginning)
	if err != nil {
		return topicRange{}, err
	}
	ends, err := a.ListOffsets(ctx, topic, client.SeekEnd)
	return topicRange{starts, ends}, err
}

// planShift is --shift-by: every chosen partition's committed offset moved
// by opts.shift, kept between its log start and its high watermark (as
// Kafka's --shift-by does), each partition so kept named in a note. A
// partition without a committed offset has nothing to shift and is refused.
func planShift(ctx context.Context, a *client.Admin, opts groupSetOffsetsOptions, before []wire.GroupOffset) (setOffsetsPlan, error) {
	r, err := listRange(ctx, a, opts.topic)
	if err != nil {
		return setOffsetsPlan{}, err
	}
	parts, err := choosePartitions(r.ends, opts.partition)
	if err != nil {
		return setOffsetsPlan{}, err
	}
	var plan setOffsetsPlan
	for _, p := range parts {
		i := slices.IndexFunc(before, func(b wire.GroupOffset) bool { return b.Topic == opts.topic && b.Partition == p })
		if i < 0 {
			return setOffsetsPlan{}, fmt.Errorf("partition %d has no committed offset to shift (set one with --to first)", p)
		}
		cur := before[i].Offset
		off := shiftOffset(cur, opts.shift)
		switch {
		case off < r.starts[p]:
			plan.notes = append(plan.notes, fmt.Sprintf("partition %d: %d shifted by %d is before the log start %d; setting %d", p, cur, opts.shift, r.starts[p], r.starts[p]))
			off = r.starts[p]
		case off > r.ends[p]:
			plan.notes = append(plan.notes, fmt.Sprintf("partition %d: %d shifted by %d is past the high watermark %d; setting %d", p, cur, opts.shift, r.ends[p], r.ends[p]))
			off = r.ends[p]
		}
		plan.offsets = append(plan.offsets, wire.GroupOffset{Topic: opts.topic, Partition: p, Offset: off, LeaderEpoch: -1})
	}
	return plan, nil
}

// shiftOffset is cur + by, saturating instead of overflowing.
func shiftOffset(cur, by int64) int64 {
	s := cur + by
	switch {
	case by > 0 && s < cur:
		return 1<<63 - 1
	case by < 0 && s > cur:
		return -1 << 63
	}
	return s
}

// planFromFile is --from-file: the offsets the file lists, each within its
// partition's log start and high watermark.
func planFromFile(ctx context.Context, a *client.Admin, file []offsetsFileEntry) (setOffsetsPlan, error) {
	entries := slices.Clone(file)
	slices.SortFunc(entries, func(x, y offsetsFileEntry) int {
		return cmp.Or(cmp.Compare(x.Topic, y.Topic), cmp.Compare(x.Partition, y.Partition))
	})
	ranges := map[string]topicRange{}
	var plan setOffsetsPlan
	for _, e := range entries {
		r, ok := ranges[e.Topic]
		if !ok {
			var err error
			if r, err = listRange(ctx, a, e.Topic); err != nil {
				return setOffsetsPlan{}, fmt.Errorf("topic %s (line %d): %w", e.Topic, e.line, err)
			}
			ranges[e.Topic] = r
		}
		end, ok := r.ends[e.Partition]
		if !ok {
			return setOffsetsPlan{}, fmt.Errorf("line %d: topic %s has %d partitions; no partition %d", e.line, e.Topic, len(r.ends), e.Partition)
		}
		if e.Offset < r.starts[e.Partition] || e.Offset > end {
			return setOffsetsPlan{}, fmt.Errorf("line %d: topic %s partition %d has offsets %d to %d; %d is outside them",
				e.line, e.Topic, e.Partition, r.starts[e.Partition], end, e.Offset)
		}
		plan.offsets = append(plan.offsets, e.GroupOffset)
	}
	return plan, nil
}
