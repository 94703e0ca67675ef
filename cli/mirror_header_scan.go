package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"paymentlog/client"
)

// The header scan: translate-offsets' fallback for a partition with no
// offset sync at or below the group's source offset S (copied before the
// syncs existed, by a build that wrote none, or with --offset-syncs-topic
// ''): it finds on the target the first record whose mirrorHeader offset
// is at least S, as README tells a user to do by hand, by a binary search
// over the target partition's offsets.
//
// Header offsets are not sorted on the target (a rerun after a crash
// repeats records from its commit on, and the target may hold records of
// its own), so the search does not look for the first such record
// anywhere, but for a boundary: a record a copied from source offset h(a)
// < S, followed (past records that are not copies of the partition's) by
// a record b copied from h(b) >= S, or by the partition's end. A consumer
// that starts at b misses nothing of S or after: every run of the mirror
// copies the partition's records in order from where it starts, and the
// run that resumes after another starts at or below the first record that
// one had not had acknowledged, so every source record after h(a) has a
// copy after a (the last run that copied a, or a later one, wrote it), and
// the first copy of the partition after a is b. A consumer at b may read
// again records below S (a rerun's), never misses one.

const (
	// headerScanMaxRecords bounds the records one probe reads from its
	// offset to the first copy of the partition (past the target's own
	// records): a partition with more of its own in a row is not
	// translated.
	headerScanMaxRecords = 10000
	// headerScanFetchBytes is the scan's PartitionMaxBytes: a probe
	// usually needs one record (a fetch returns a whole batch even if
	// larger).
	headerScanFetchBytes = 64 << 10
)

// headerProbe reads the target partition from offset from on to the first
// record that is a copy of the source partition (its mirrorHeader names
// it): its target offset and the source offset it names; found false when
// there is none before the partition's end.
type headerProbe func(ctx context.Context, from int64) (at, source int64, found bool, err error)

// errNoCopies: the target partition holds no record the mirror copied
// with --source-offset-header between its log start and its end.
var errNoCopies = errors.New("no record between its log start and end carries the mirror header")

// findByHeaders is the header scan of a target partition whose log runs
// from start to end (its high watermark), for source offset s: the target
// offset of b (see above), or end when every copy is of an offset below s.
// It probes at most 2 + log2(end - start) times.
func findByHeaders(ctx context.Context, start, end, s int64, probe headerProbe) (target int64, probes int, err error) {
	at, h, found, err := probe(ctx, start)
	probes++
	switch {
	case err != nil:
		return -1, probes, err
	case !found:
		return -1, probes, errNoCopies
	case h >= s:
		return at, probes, nil // the first copy left is past s: the records before were deleted
	}
	// Invariant: the first copy at or after lo is below s; the first at
	// or after hi is hiAt (hiFound) and at least s, or there is none.
	lo, hi := at, end
	hiAt, hiFound := int64(-1), false
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		at, h, found, err := probe(ctx, mid)
		probes++
		switch {
		case err != nil:
			return -1, probes, err
		case !found || h >= s:
			hi, hiAt, hiFound = mid, at, found
		default:
			lo = at // a copy below s: the first at or after lo is that one
		}
	}
	// lo is a copy below s, and the first copy after it is hiAt.
	if hiFound {
		return hiAt, probes, nil
	}
	return end, probes, nil
}

// headerScanner probes target partitions with one consumer.
type headerScanner struct {
	cons *client.Consumer
}

func newHeaderScanner(c *client.Client) *headerScanner {
	return &headerScanner{cons: c.NewConsumer(client.ConsumerConfig{MaxWait: 20 * time.Millisecond, PartitionMaxBytes: headerScanFetchBytes,
		// Retention moving the log start past a probe: go on from it.
		OnOffsetReset: func(client.TopicPartition, int64, int64) {}})}
}

// scan is findByHeaders of target partition tp, whose log runs from start
// to end, for offset s of source partition src (of which tp holds the
// copies: the same partition, the topic named by the replication policy).
func (h *headerScanner) scan(ctx context.Context, tp, src client.TopicPartition, start, end, s int64) (int64, int, error) {
	h.cons.Assign([]client.TopicPartition{tp}, start)
	defer h.cons.Unassign([]client.TopicPartition{tp})
	return findByHeaders(ctx, start, end, s, func(ctx context.Context, from int64) (int64, int64, bool, error) {
		return h.probe(ctx, tp, src, from, end)
	})
}

// probe is a headerProbe of target partition tp, whose end is end, for
// copies of source partition src.
func (h *headerScanner) probe(ctx context.Context, tp, src client.TopicPartition, from, end int64) (at, source int64, found bool, err error) {
	if err := h.cons.Seek(tp, from); err != nil {
		return 0, 0, false, err
	}
	read := 0
	err = h.readCopies(ctx, tp, src, from, end, func(offset, s int64, copied bool) error {
		if copied {
			at, source, found = offset, s, true
			return errStopReading
		}
		if read++; read >= headerScanMaxRecords {
			return fmt.Errorf("%d records from offset %d on, none copied from the source partition: gave up", read, from)
		}
		return nil
	})
	if err != nil {
		return 0, 0, false, err
	}
	return at, source, found, nil
}

// errStopReading, from readCopies' visit, ends the read without an error.
var errStopReading = errors.New("stop reading")

// readCopies reads target partition tp, whose consumer is at offset from,
// up to offset end, and calls visit with each record's offset and, for a
// copy of source partition src, the source offset its mirrorHeader names
// (copied false for any other record), until visit returns an error
// (errStopReading: none) or the partition reaches end.
func (h *headerScanner) readCopies(ctx context.Context, tp, src client.TopicPartition, from, end int64, visit func(offset, source int64, copied bool) error) error {
	for {
		if pos, ok := h.cons.Position(tp); ok && pos >= end {
			return nil
		}
		msgs, err := h.cons.Poll(ctx)
		if err != nil {
			return fmt.Errorf("read %s/%d from offset %d: %w", tp.Topic, tp.Partition, from, err)
		}
		for _, m := range msgs {
			if m.Offset < from || m.Offset >= end {
				continue
			}
			s, copied := copySource(m, src)
			if err := visit(m.Offset, s, copied); err != nil {
				if errors.Is(err, errStopReading) {
					return nil
				}
				return err
			}
		}
	}
}

// copySource is the source offset of src that the first mirrorHeader of m
// naming src gives; false when none does (the mirror writes one a record).
func copySource(m client.Message, src client.TopicPartition) (int64, bool) {
	for _, hd := range m.Headers {
		if hd.Key != mirrorHeader {
			continue
		}
		if s, ok := parseSourcePosition(hd.Value, src); ok {
			return s, true
		}
	}
	return 0, false
}

func (h *headerScanner) close() { h.cons.Close() }

// parseSourcePosition decodes a mirrorHeader value (sourcePosition) naming
// a source offset of tp; false for any other value.
func parseSourcePosition(v []byte, tp client.TopicPartition) (int64, bool) {
	prefix := strconv.AppendInt(append([]byte(tp.Topic), '/'), int64(tp.Partition), 10)
	prefix = append(prefix, '/')
	if len(v) <= len(prefix) || string(v[:len(prefix)]) != string(prefix) {
		return 0, false
	}
	rest := v[len(prefix):]
	if rest[0] < '0' || rest[0] > '9' { // ParseInt takes a sign
		return 0, false
	}
	o, err := strconv.ParseInt(string(rest), 10, 64)
	return o, err == nil
}
