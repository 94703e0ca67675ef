package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"paymentlog/client"
	"paymentlog/wire"
)

// The rolling restart benchmark (`paymentlog bench rolling`): what
// restarting every node in turn, as an upgrade does, costs the writers.
// Under the failover benchmark's steady acks=all, idempotent load, each of
// --roll-rounds rolls restarts every node of the local cluster, the active
// controller last, as `scripts/cluster.sh roll` does: wait for the node's
// /safe-to-stop, SIGTERM it (a controlled shutdown: its leaderships move
// away first), wait for it to exit, start it again, wait for its /readyz.
// Afterwards everything is read back: no acknowledged record may be lost.

// RollingRestart is one node's restart. Times are in milliseconds, -1 when
// the step did not happen. Its window runs from its SIGTERM to the next
// restart's (the last: to the end of the load; rolling_cost.go): what
// the writers saw in it is the restart's cost.
type RollingRestart struct {
	Round int   `json:"round"`
	Node  int32 `json:"node"`
	// WasController: the node was the active controller when its turn came.
	WasController bool `json:"was_controller"`
	// SafeToStopWaitMs runs from the first request to its /safe-to-stop
	// until it answered 200; SafeToStopRefusals counts the 503 answers
	// before that, and SafeToStopReason is the last one's first line.
	SafeToStopWaitMs   float64 `json:"safe_to_stop_wait_ms"`
	SafeToStopRefusals int     `json:"safe_to_stop_refusals"`
	SafeToStopReason   string  `json:"safe_to_stop_reason,omitempty"`
	// ShutdownMs runs from the SIGTERM to the process's exit: the
	// controlled shutdown.
	ShutdownMs float64 `json:"shutdown_ms"`
	// ReadyMs runs from the start to /readyz answering 200 (registered,
	// back in every ISR); ReadyRefusals counts its 503 answers.
	ReadyMs       float64 `json:"ready_ms"`
	ReadyRefusals int     `json:"ready_refusals"`
	// UnavailableMs is the longest time between two acknowledged writes
	// (found in the read-back) of any one partition whose second falls in
	// the window (longestGap), and UnavailablePartition that partition;
	// PartitionGapsMs has every partition's, by partition number.
	UnavailableMs        float64   `json:"unavailable_ms"`
	UnavailablePartition int32     `json:"unavailable_partition"`
	PartitionGapsMs      []float64 `json:"partition_gap_ms"`
	// UnavailableEndMs is when that longest gap ended (writes resumed), in
	// ms from the SIGTERM: within ShutdownMs, the controlled shutdown's
	// stall; past ShutdownMs+ReadyMs, one after the node was back (its
	// leaderships moving back to it).
	UnavailableEndMs float64 `json:"unavailable_end_ms"`
	// ProduceErrors counts the load's failed produce requests in the
	// window by cause (client.ProducerStats.FailedByCause): the leader's
	// error code, or NoAnswer; retried ones included.
	ProduceErrors map[string]uint64 `json:"produce_errors"`
	// MaxProduceLatencyMs is the longest produce latency (from the intended
	// send time) of the records acknowledged in the window.
	MaxProduceLatencyMs float64 `json:"max_produce_latency_ms"`
	// BelowMinISRMs is how long the metadata showed a partition with fewer
	// in-sync replicas than min.insync.replicas in the window (acks=all
	// refused there; a roll gated by /safe-to-stop keeps it 0).
	BelowMinISRMs         float64 `json:"below_min_isr_ms"`
	BelowMinISRPartitions []int32 `json:"below_min_isr_partitions,omitempty"`
	// Changes counts the metadata changes the watcher saw in the window.
	Changes  Changes `json:"changes"`
	WindowMs float64 `json:"window_ms"`
	Error    string  `json:"error,omitempty"`

	stopAt       time.Time         // the SIGTERM; zero: the node was not stopped
	causesAtStop map[string]uint64 // the load's failed requests by cause then
}

// RollingResult is the rolling restart benchmark's output.
type RollingResult struct {
	Topic      string `json:"topic"`
	Partitions int    `json:"partitions"`
	MinISR     int    `json:"min_insync_replicas"`
	Rate       int    `json:"rate_records_per_sec"`
	RecordSize int    `json:"record_size"`
	Rounds     int    `json:"rounds"`
	// Planned is how many restarts the rounds make (rounds × nodes); a
	// failed step ends the roll early.
	Planned  int              `json:"planned_restarts"`
	Restarts []RollingRestart `json:"restarts"`
	// BaselineGapMs and BaselineMaxLatencyMs are the longest gap between
	// acknowledged writes of a partition and the longest produce latency
	// under the same load before the first restart, over BaselineMs (from
	// the first acknowledgement to the first SIGTERM): what the restarts'
	// figures compare with.
	BaselineMs           float64 `json:"baseline_ms"`
	BaselineGapMs        float64 `json:"baseline_gap_ms"`
	BaselineMaxLatencyMs float64 `json:"baseline_max_produce_latency_ms"`
	// Summaries of the restarts' figures.
	UnavailableMs       Summary `json:"unavailable_ms"`
	ShutdownMs          Summary `json:"shutdown_ms"`
	ReadyMs             Summary `json:"ready_ms"`
	SafeToStopWaitMs    Summary `json:"safe_to_stop_wait_ms"`
	MaxProduceLatencyMs Summary `json:"max_produce_latency_ms"`
	// ProduceErrors counts the load's failed produce requests of the whole
	// run by cause; BelowMinISRMs sums the restarts'.
	ProduceErrors map[string]uint64 `json:"produce_errors"`
	BelowMinISRMs float64           `json:"below_min_isr_ms"`
	Acked         int64             `json:"acked"`
	Failed        int64             `json:"failed"` // records whose delivery failed (not acknowledged: not a loss)
	Verified      int64             `json:"verified"`
	// LostRecords counts acknowledged records missing from, or different
	// in, the log read back afterwards; Unverified those not checked (the
	// read-back failed); Duplicates records found at two offsets. All
	// must be 0.
	LostRecords       int64       `json:"lost_records"`
	Unverified        int64       `json:"unverified"`
	Duplicates        int64       `json:"duplicates"`
	ProduceLatency    Percentiles `json:"produce_latency_ms"`
	Seconds           float64     `json:"seconds"`
	FirstError        string      `json:"first_error,omitempty"`
	LostExamples      []string    `json:"lost_examples,omitempty"`
	DuplicateExamples []string    `json:"duplicate_examples,omitempty"`
}

// rollingBaseline is how long the load runs before the first restart: its
// steady state, the baseline.
const rollingBaseline = time.Second

// rollingMinISR is the rolling topic's min.insync.replicas (RF 3), as the
// failover benchmark's.
const rollingMinISR = 2

// runRolling keeps the failover load running while it rolls the local
// cluster cfg.Rolling.Rounds times, then reads everything back.
func (r *runner) runRolling(ctx context.Context) (*RollingResult, error) {
	lt, ok := r.target.(*localTarget)
	if !ok {
		return nil, errors.New("bench: rolling runs on the bench's own local cluster only")
	}
	health := lt.metricsAddrs()
	ids := lt.c.IDs()
	for _, id := range ids {
		if health[id] == "" {
			return nil, fmt.Errorf("bench: rolling: node %d serves no health endpoints (no --metrics-addr)", id)
		}
	}
	fc, rc := r.cfg.Failover, r.cfg.Rolling
	topic := fmt.Sprintf("bench-rolling-%d", time.Now().UnixNano())
	res := &RollingResult{Topic: topic, Partitions: fc.Partitions, MinISR: rollingMinISR, Rate: fc.Rate, RecordSize: fc.RecordSize,
		Rounds: rc.Rounds, Planned: rc.Rounds * len(ids)}
	if err := r.createTopic(ctx, topic, fc.Partitions, 3, rollingMinISR); err != nil {
		return nil, err
	}
	w := newWatcher(ctx, r.ep, r.target.bootstrap(), []string{topic}, fc.Poll)
	defer w.close()
	if _, err := r.waitHealthy(ctx, w, topic, fc.Timeout); err != nil {
		return nil, err
	}
	ps, err := newProducerSet(ctx, r.clientConfig(), client.ProducerConfig{Acks: client.AcksAll, Linger: time.Millisecond}, 1)
	if err != nil {
		return nil, err
	}
	defer ps.close()
	causes := func() map[string]uint64 {
		var sum map[string]uint64
		for _, p := range ps.producers {
			sum = addCounts(sum, p.Stats().FailedByCause)
		}
		return sum
	}

	tl := &ackTimeline{start: time.Now()}
	var lats struct {
		sync.Mutex
		l []latencyAt
	}
	stop := make(chan struct{})
	loadDone := make(chan *loadResult, 1)
	go func() {
		loadDone <- runLoad(ctx, ps.producers, loadConfig{
			topic: topic, partitions: fc.Partitions, recordSize: fc.RecordSize,
			rate: float64(fc.Rate), duration: 24 * time.Hour, explicit: true, stop: stop,
			onAck: func(d client.Delivery, id recordID, at time.Time) { tl.add(d, id, at) },
			onLatency: func(at time.Time, lat time.Duration) {
				lats.Lock()
				lats.l = append(lats.l, latencyAt{at, lat})
				lats.Unlock()
			},
		})
	}()

	// The steady load first, as the baseline the restarts are compared with.
	var baselineFrom time.Time
	for ctx.Err() == nil && baselineFrom.IsZero() {
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Millisecond):
			if _, times := tl.snapshot(); len(times) > 0 {
				baselineFrom = times[0]
			}
		}
	}
	select {
	case <-ctx.Done():
	case <-time.After(time.Until(baselineFrom.Add(rollingBaseline))):
	}
	bar := r.progress.steps("rolling", res.Planned, "restarts")
roll:
	for round := 1; round <= rc.Rounds; round++ {
		var ctrl int32 = -1
		if v := w.latest(); v != nil {
			ctrl = controllerOf(v.md)
		}
		for _, id := range rollOrder(ids, ctrl) {
			if ctx.Err() != nil {
				break roll
			}
			rs := r.rollStep(ctx, w, lt, health[id], round, id, causes)
			res.Restarts = append(res.Restarts, rs)
			bar.step(len(res.Restarts))
			if rs.Error != "" {
				r.log.Warn("rolling restart step failed", "node", id, "round", round, "err", rs.Error)
				break roll
			}
		}
	}
	bar.done()
	// The last restart's window takes in the leaderships moving back: the
	// controller holds each back a while after its node rejoined the ISR
	// (--preferred-leader-delay), so wait until every partition is led by
	// its preferred replica again, then for the metadata to stay quiet.
	pctx, cancel := context.WithTimeout(ctx, fc.Timeout)
	if _, err := w.waitState(pctx, func(md *wire.MetadataResponse) bool { return onPreferredLeaders(md, topic, fc.Partitions) }); err != nil && ctx.Err() == nil {
		r.log.Warn("rolling: partitions not back on their preferred leaders", "err", err)
	}
	cancel()
	w.quietFor(ctx, 300*time.Millisecond, 2*time.Second)
	end := time.Now()
	atEnd := causes()
	close(stop)
	lr := <-loadDone
	res.Acked, res.Failed = lr.acked, lr.failed
	res.ProduceLatency = lr.lat.percentiles()
	res.ProduceErrors = causes()
	res.Seconds = time.Since(tl.start).Seconds()
	if lr.firstErr != nil {
		res.FirstError = lr.firstErr.Error()
	}
	if ctx.Err() != nil {
		res.summarize()
		return res, ctx.Err()
	}
	if _, err := r.waitHealthy(ctx, w, topic, fc.Timeout); err != nil {
		r.log.Warn("cluster not healthy before readback", "err", err)
	}
	acks, times := tl.snapshot()
	got, err := r.readBack(ctx, topic, ackedEnds(acks))
	if err != nil {
		res.Unverified = int64(len(acks))
		res.summarize()
		return res, err
	}
	lats.Lock()
	res.measure(acks, times, got, w.viewsOf(), lats.l, baselineFrom, end, atEnd)
	lats.Unlock()
	res.summarize()
	return res, nil
}

// onPreferredLeaders reports whether md shows each of topic's n partitions
// led by its preferred (first) replica.
func onPreferredLeaders(md *wire.MetadataResponse, topic string, n int) bool {
	for i := range n {
		p, ok := partitionOf(md, topic, int32(i))
		if !ok || len(p.Replicas) == 0 || p.Leader != p.Replicas[0] {
			return false
		}
	}
	return true
}

// rollStep restarts node id once: waits for its /safe-to-stop (at addr),
// SIGTERMs it and waits for its exit, starts it and waits for its /readyz.
// Each wait is bounded by --failover-timeout. A node that was never safe
// to stop is left running; one stopped is always started again.
func (r *runner) rollStep(ctx context.Context, w *watcher, lt *localTarget, addr string, round int, id int32, causes func() map[string]uint64) RollingRestart {
	fc := r.cfg.Failover
	rs := RollingRestart{Round: round, Node: id, SafeToStopWaitMs: -1, ShutdownMs: -1, ReadyMs: -1, UnavailableMs: -1,
		UnavailablePartition: -1, UnavailableEndMs: -1, MaxProduceLatencyMs: -1}
	sctx, cancel := context.WithTimeout(ctx, fc.Timeout)
	hw, err := waitHealth(sctx, addr, "/safe-to-stop", fc.Poll)
	cancel()
	rs.SafeToStopRefusals, rs.SafeToStopReason = hw.refusals, hw.lastReason
	if err != nil {
		rs.Error = "never safe to stop: " + err.Error()
		return rs
	}
	rs.SafeToStopWaitMs = ms(hw.waited)
	if v := w.latest(); v != nil {
		rs.WasController = controllerOf(v.md) == id
	}
	rs.causesAtStop = causes()
	rs.stopAt = time.Now()
	var errs []string
	if err := lt.terminate(ctx, id); err != nil {
		errs = append(errs, "stop: "+err.Error())
	} else {
		rs.ShutdownMs = ms(time.Since(rs.stopAt))
	}
	startAt := time.Now()
	if err := lt.restart(ctx, id); err != nil {
		errs = append(errs, "start: "+err.Error())
	} else {
		rctx, cancel := context.WithTimeout(ctx, fc.Timeout)
		hw, err := waitHealth(rctx, addr, "/readyz", fc.Poll)
		cancel()
		rs.ReadyRefusals = hw.refusals
		if err != nil {
			errs = append(errs, "never ready: "+err.Error())
		} else {
			rs.ReadyMs = ms(time.Since(startAt))
		}
	}
	if len(errs) > 0 {
		rs.Error = fmt.Sprint(errs)
	}
	return rs
}

// terminate stops node id with SIGTERM (a controlled shutdown) and waits
// for it to exit. A node that does not exit in localcluster's StopTimeout
// is SIGKILLed; that, or any exit status but 0, is an error.
func (t *localTarget) terminate(ctx context.Context, id int32) error {
	if err := t.c.Stop(ctx, id); err != nil {
		return err
	}
	if e := t.c.Node(id).LastExit; e != nil {
		return fmt.Errorf("bench: node %d ended with %v after SIGTERM", id, e)
	}
	return nil
}

// measure checks the read-back (got) against the acknowledgements and
// computes each stopped restart's window figures from the acknowledgements
// found in it, the produce latencies, the metadata views and the failed
// requests by cause (atEnd: at the window's end of the last one). It is
// pure.
func (res *RollingResult) measure(acks []ackRec, times []time.Time, got map[int32]map[int64]readRec, views []view, lats []latencyAt, baselineFrom, end time.Time, atEnd map[string]uint64) {
	fr := &FailoverResult{Topic: res.Topic}
	fr.checkReadback(acks, times, got)
	res.Verified, res.LostRecords, res.Duplicates = fr.Verified, fr.LostRecords, fr.Duplicates
	res.LostExamples, res.DuplicateExamples = fr.LostExamples, fr.DuplicateExamples

	per := ackTimes(acks, times, got)
	var stopped []*RollingRestart
	var stops []time.Time
	for i := range res.Restarts {
		if rs := &res.Restarts[i]; !rs.stopAt.IsZero() {
			stopped = append(stopped, rs)
			stops = append(stops, rs.stopAt)
		}
	}
	if len(stops) > 0 && baselineFrom.Before(stops[0]) {
		base := window{baselineFrom, stops[0]}
		res.BaselineMs = ms(base.to.Sub(base.from))
		for p := range res.Partitions {
			d, _ := longestGap(per[int32(p)], base)
			res.BaselineGapMs = max(res.BaselineGapMs, ms(d))
		}
		res.BaselineMaxLatencyMs = ms(maxLatency(lats, base))
	}
	res.BelowMinISRMs = 0
	for i, win := range windowsOf(stops, end) {
		rs := stopped[i]
		rs.WindowMs = ms(win.to.Sub(win.from))
		rs.PartitionGapsMs = make([]float64, res.Partitions)
		for p := range res.Partitions {
			d, gap := longestGap(per[int32(p)], win)
			g := ms(d)
			rs.PartitionGapsMs[p] = g
			if g > rs.UnavailableMs {
				rs.UnavailableMs, rs.UnavailablePartition = g, int32(p)
				rs.UnavailableEndMs = ms(gap.to.Sub(rs.stopAt))
			}
		}
		rs.MaxProduceLatencyMs = ms(maxLatency(lats, win))
		next := atEnd
		if i+1 < len(stopped) {
			next = stopped[i+1].causesAtStop
		}
		rs.ProduceErrors = countsSince(rs.causesAtStop, next)
		below, parts := belowMinISR(views, res.Topic, res.MinISR, win)
		rs.BelowMinISRMs, rs.BelowMinISRPartitions = ms(below), parts
		res.BelowMinISRMs += rs.BelowMinISRMs
		rs.Changes = changesIn(views, win)
	}
}

// changesIn counts the metadata changes among the views that arrived in w,
// compared with the last view before it (watcher.changes on a copy).
func changesIn(views []view, w window) Changes {
	var c Changes
	var prev *view
	for i := range views {
		v := &views[i]
		if v.at.Before(w.from) {
			prev = v
			continue
		}
		if !v.at.Before(w.to) {
			break
		}
		if prev != nil {
			c.add(diffViews(prev.md, v.md))
		}
		prev = v
	}
	return c
}

// summarize computes the p50/p99/max figures over the restarts.
func (res *RollingResult) summarize() {
	var unavail, shutdown, ready, safe, lat []float64
	for _, rs := range res.Restarts {
		unavail = append(unavail, rs.UnavailableMs)
		shutdown = append(shutdown, rs.ShutdownMs)
		ready = append(ready, rs.ReadyMs)
		safe = append(safe, rs.SafeToStopWaitMs)
		lat = append(lat, rs.MaxProduceLatencyMs)
	}
	res.UnavailableMs, res.ShutdownMs, res.ReadyMs = summarizeTrials(unavail), summarizeTrials(shutdown), summarizeTrials(ready)
	res.SafeToStopWaitMs, res.MaxProduceLatencyMs = summarizeTrials(safe), summarizeTrials(lat)
}

// problems lists what makes a rolling run fail: acknowledged records lost
// or not verified, records at two offsets, a failed step or a roll cut
// short.
func (res *RollingResult) problems() []error {
	errs := readBackProblems(res.Acked, res.LostRecords, res.Unverified, res.Duplicates)
	for _, rs := range res.Restarts {
		if rs.Error != "" {
			errs = append(errs, fmt.Errorf("round %d node %d: %s", rs.Round, rs.Node, rs.Error))
		}
	}
	if len(res.Restarts) < res.Planned {
		errs = append(errs, fmt.Errorf("%d of %d restarts done", len(res.Restarts), res.Planned))
	}
	return errs
}
