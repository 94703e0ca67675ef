package bench

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"
)

// latencyTrace keeps one row per acknowledged record of the paced latency
// run, for --latency-trace. The report's percentiles say how long the tail
// is; the trace says when it happened. Its times are wall-clock unix
// microseconds, so it lines up with other tools' clocks: `perf record -k
// CLOCK_REALTIME`, quic-go's qlog, node logs. That is how the latency
// episodes in the README were found.
//
// File format: CSV, one header line, then one row per record, ordered by
// start time:
//
//	start_unix_us,latency_us,send_late_us,partition,producer
//
// start_unix_us is where the record's produce latency starts counting. That
// is the intended send time of the paced schedule, or the actual Produce
// call when the sender ran ahead of schedule.
//
// latency_us runs from the start to the acknowledgement (what the report's
// produce latency counts).
//
// send_late_us is how much later than the start the sender actually called
// Produce. latency_us - send_late_us is therefore the part spent after the
// call.
//
// producer is the index of the paced producer.
type latencyTrace struct {
	mu    sync.Mutex
	rows  []traceRow
	limit int // rows kept at most; 0: all
}

type traceRow struct {
	start     int64 // unix µs
	latency   int64 // µs
	late      int64 // µs
	partition int32
	producer  uint32
}

// newLatencyTrace keeps at most limit rows (0: all). It makes room for
// about rate × d records up front, so the recording does not reallocate
// (and copy) in the middle of the run it measures.
func newLatencyTrace(rate float64, d time.Duration, limit int) *latencyTrace {
	n := min(int(rate*d.Seconds()*1.1)+1024, 1<<24)
	if limit > 0 {
		n = min(n, limit)
	}
	return &latencyTrace{rows: make([]traceRow, 0, n), limit: limit}
}

// probeTraceLimit bounds the rows kept when only the CPU speed probe needs
// them (no --latency-trace): 2 Mi rows of 32 bytes, a 45 s paced run at
// 45 k records/s. The clear-of-slowdowns latency then covers the first
// that many records.
const probeTraceLimit = 1 << 21

// add records one acknowledged record; safe for concurrent use.
func (t *latencyTrace) add(start, ack, called time.Time, partition int32, producer uint32) {
	r := traceRow{start: start.UnixMicro(), latency: ack.Sub(start).Microseconds(),
		late: max(called.Sub(start), 0).Microseconds(), partition: partition, producer: producer}
	t.mu.Lock()
	if t.limit == 0 || len(t.rows) < t.limit {
		t.rows = append(t.rows, r)
	}
	t.mu.Unlock()
}

const traceHeader = "start_unix_us,latency_us,send_late_us,partition,producer"

// writeCSV writes the header and the rows in start order.
func (t *latencyTrace) writeCSV(w io.Writer) error {
	t.mu.Lock()
	rows := slices.Clone(t.rows)
	t.mu.Unlock()
	slices.SortStableFunc(rows, func(a, b traceRow) int { return cmp.Compare(a.start, b.start) })
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, traceHeader)
	for _, r := range rows {
		fmt.Fprintf(bw, "%d,%d,%d,%d,%d\n", r.start, r.latency, r.late, r.partition, r.producer)
	}
	return bw.Flush()
}

// writeFile writes the trace to path.
func (t *latencyTrace) writeFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("bench: latency trace: %w", err)
	}
	if err := t.writeCSV(f); err != nil {
		f.Close()
		return fmt.Errorf("bench: latency trace %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("bench: latency trace %s: %w", path, err)
	}
	return nil
}

// clearOf returns the latency percentiles of the rows whose whole latency,
// from start to acknowledgement, lies outside every window (in start
// order), and how many rows it looked at. The percentiles' Count says how
// many were clear.
func (t *latencyTrace) clearOf(windows []SlowWindow) (Percentiles, int64) {
	l := newLatency()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range t.rows {
		if !overlapsAny(windows, r.start, r.start+r.latency) {
			l.record(time.Duration(r.latency) * time.Microsecond)
		}
	}
	return l.percentiles(), int64(len(t.rows))
}
