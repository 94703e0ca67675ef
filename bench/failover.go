package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"paymentlog/client"
	"paymentlog/wire"
)

// FailoverTrial is one SIGKILL of partition 0's leader. Times are in
// milliseconds from the kill (RejoinMs: from the restart); -1 when the step
// did not happen within the timeout. "The kill" is the instant before the
// kill started (FailoverResult.KillInstant): with --kill-cmd, an upper bound.
type FailoverTrial struct {
	Trial       int     `json:"trial"`
	Victim      int32   `json:"victim"`
	NewLeader   int32   `json:"new_leader"`
	FenceMs     float64 `json:"fence_ms"`      // until the metadata shows the victim fenced
	NewLeaderMs float64 `json:"new_leader_ms"` // until the metadata shows another leader
	// UnavailableMs runs until the first acknowledgement of a partition 0
	// record written by a later leader epoch than the victim's (known from
	// the readback, so an answer the victim sent just before dying does not
	// count as the new leader's).
	UnavailableMs float64 `json:"unavailable_ms"`
	RejoinMs      float64 `json:"rejoin_isr_ms"` // restart until the victim is back in every ISR it belongs to
	// ConsumerResumeMs runs from the kill until a consumer following
	// partition 0 (its own client) received the first record produced
	// after the kill: the reader's leader discovery and the writer's
	// together (-1: none within --failover-timeout).
	ConsumerResumeMs float64 `json:"consumer_resume_ms"`
	// AckAfterLeaderMs is UnavailableMs less NewLeaderMs: from the new
	// leader showing in the metadata to the first acknowledged write, the
	// clients' and the new leader's part of the failover (-1 when either
	// is missing).
	AckAfterLeaderMs float64 `json:"ack_after_new_leader_ms"`
	OldEpoch         int32   `json:"victim_leader_epoch"`
	// VictimWasController: the victim was also the active controller, so
	// its fencing first waited for a new controller's election.
	VictimWasController bool `json:"victim_was_controller"`
	// FencedBy is why the controller fenced the victim, as the other local
	// nodes counted it (paymentlog_controller_broker_fences_total):
	// "port_closed" (its host refused a probe of its port or the node's own
	// datagrams to it: the process was gone), "session" (its session ran out); "" when unknown (an existing
	// cluster, a scrape that failed, or no single cause counted).
	FencedBy string `json:"fenced_by,omitempty"`
	// PortFoundBy, for a victim fenced as port_closed, is what found its
	// port closed (paymentlog_controller_port_closed_fences_total): "probe"
	// (the controller's probe was refused), "traffic" (the controller
	// node's own datagrams to it drew an ICMP port unreachable) or "raft"
	// (the raft follower that became controller found it so); "" when
	// unknown.
	PortFoundBy string `json:"port_found_by,omitempty"`
	// KillCmdMs is how long the kill took, from its start to its return
	// (-1: no kill). With --kill-cmd the SIGKILL came somewhere in it, so
	// each time above is at most KillCmdMs above the true figure.
	KillCmdMs float64 `json:"kill_cmd_ms"`
	Error     string  `json:"error,omitempty"`
	// LogsKept names the directory holding the nodes' log lines of this
	// trial when it took longer than --keep-slow-trials or failed
	// (slowtrial.go).
	LogsKept string `json:"logs_kept,omitempty"`

	killAt, fenceAt, leaderAt, ackAt time.Time
}

// FailoverResult is the failover benchmark's output.
type FailoverResult struct {
	Topic         string          `json:"topic"`
	Partitions    int             `json:"partitions"`
	Rate          int             `json:"rate_records_per_sec"`
	RecordSize    int             `json:"record_size"`
	Trials        []FailoverTrial `json:"trials"`
	FenceMs       Summary         `json:"fence_ms"`
	NewLeaderMs   Summary         `json:"new_leader_ms"`
	UnavailableMs Summary         `json:"unavailable_ms"`
	RejoinMs      Summary         `json:"rejoin_isr_ms"`
	// ConsumerResumeMs summarizes the trials' ConsumerResumeMs.
	ConsumerResumeMs Summary `json:"consumer_resume_ms"`
	// AckAfterLeaderMs summarizes the trials' AckAfterLeaderMs.
	AckAfterLeaderMs Summary `json:"ack_after_new_leader_ms"`
	// KillInstant says what the trials' times run from: KillInstantSignal
	// (exact) or KillInstantCmdStart (upper bounds; KillCmdMs says by how
	// much at most).
	KillInstant string  `json:"kill_instant"`
	KillCmdMs   Summary `json:"kill_cmd_ms"`
	Acked       int64   `json:"acked"`
	Failed      int64   `json:"failed"` // records whose delivery failed (not acknowledged: not a loss)
	Verified    int64   `json:"verified"`
	// LostRecords counts acknowledged records missing from, or different in,
	// the log read back afterwards. Must be 0.
	LostRecords int64 `json:"lost_records"`
	// Unverified counts acknowledged records that could not be checked
	// (the read-back failed). Must be 0.
	Unverified int64 `json:"unverified"`
	// Duplicates counts records found at more than one offset. Must be 0
	// (the producer is idempotent).
	Duplicates     int64       `json:"duplicates"`
	ProduceLatency Percentiles `json:"produce_latency_ms"`
	Seconds        float64     `json:"seconds"`
	FirstError     string      `json:"first_error,omitempty"`
	LostExamples   []string    `json:"lost_examples,omitempty"`
	// DuplicateExamples shows up to 10 records found at several offsets.
	DuplicateExamples []string `json:"duplicate_examples,omitempty"`

	timeline *ackTimeline
}

// ackRec is one acknowledged record.
type ackRec struct {
	part   int32
	offset int64
	id     recordID
}

// ackTimeline collects acknowledgements of a run.
type ackTimeline struct {
	start time.Time
	mu    sync.Mutex
	acks  []ackRec
	times []time.Time // parallel to acks
}

func (t *ackTimeline) add(d client.Delivery, id recordID, at time.Time) {
	t.mu.Lock()
	t.acks = append(t.acks, ackRec{part: d.Partition, offset: d.Offset, id: id})
	t.times = append(t.times, at)
	t.mu.Unlock()
}

// runFailover keeps a paced acks=all load running while it kills partition
// 0's leader cfg.Trials times, then reads everything back.
func (r *runner) runFailover(ctx context.Context) (*FailoverResult, error) {
	fc := r.cfg.Failover
	topic := fmt.Sprintf("bench-failover-%d", time.Now().UnixNano())
	res := &FailoverResult{Topic: topic, Partitions: fc.Partitions, Rate: fc.Rate, RecordSize: fc.RecordSize, KillInstant: killInstant(r.target)}
	if err := r.createTopic(ctx, topic, fc.Partitions, 3, 2); err != nil {
		return nil, err
	}
	w := newWatcher(ctx, r.ep, r.target.bootstrap(), []string{topic}, fc.Poll)
	defer w.close()
	if _, err := r.waitHealthy(ctx, w, topic, fc.Timeout); err != nil {
		return nil, err
	}
	pcfg := client.ProducerConfig{Acks: client.AcksAll, Linger: time.Millisecond}
	ps, err := newProducerSet(ctx, r.clientConfig(), pcfg, 1)
	if err != nil {
		return nil, err
	}
	defer ps.close()

	rw, err := r.startResumeWatch(ctx, topic)
	if err != nil {
		return nil, err
	}
	defer rw.close()

	tl := &ackTimeline{}
	res.timeline = tl
	var killAt, firstAck atomic.Int64 // unix nanos; 0 = not armed / none yet
	stop := make(chan struct{})
	loadDone := make(chan *loadResult, 1)
	tl.start = time.Now()
	go func() {
		loadDone <- runLoad(ctx, ps.producers, loadConfig{
			topic: topic, partitions: fc.Partitions, recordSize: fc.RecordSize,
			rate: float64(fc.Rate), duration: 24 * time.Hour, explicit: true, stop: stop,
			onAck: func(d client.Delivery, id recordID, at time.Time) {
				tl.add(d, id, at)
				if k := killAt.Load(); k != 0 && d.Partition == 0 && at.UnixNano() > k {
					firstAck.CompareAndSwap(0, at.UnixNano())
				}
			},
		})
	}()
	stopLoad := func() *loadResult {
		select {
		case <-stop:
		default:
			close(stop)
		}
		return <-loadDone
	}

	bar := r.progress.steps("failover", fc.Trials, "trials")
	// Let the load reach its steady state before the first kill.
	w.quietFor(ctx, 500*time.Millisecond, 2*time.Second)
	for i := range fc.Trials {
		if ctx.Err() != nil {
			break
		}
		tr := r.failoverTrial(ctx, w, rw, topic, i+1, &killAt, &firstAck)
		res.Trials = append(res.Trials, tr)
		bar.step(i + 1)
		if tr.Error != "" {
			r.log.Warn("failover trial failed", "trial", i+1, "err", tr.Error)
		}
	}
	bar.done()
	// A little more steady load after the last trial, then stop.
	w.quietFor(ctx, 300*time.Millisecond, 2*time.Second)
	lr := stopLoad()
	res.Acked, res.Failed = lr.acked, lr.failed
	res.ProduceLatency = lr.lat.percentiles()
	res.Seconds = time.Since(tl.start).Seconds()
	if lr.firstErr != nil {
		res.FirstError = lr.firstErr.Error()
	}
	if ctx.Err() != nil {
		res.unmeasured()
		res.summarize()
		return res, ctx.Err()
	}
	if _, err := r.waitHealthy(ctx, w, topic, fc.Timeout); err != nil {
		r.log.Warn("cluster not healthy before readback", "err", err)
	}
	err = r.verify(ctx, topic, res)
	res.summarize()
	return res, err
}

// summarize computes the p50/p99/max figures over the trials.
func (res *FailoverResult) summarize() {
	var fence, leader, unavail, rejoin, kill, resume, after []float64
	for i := range res.Trials {
		t := &res.Trials[i]
		t.AckAfterLeaderMs = -1
		if t.UnavailableMs >= 0 && t.NewLeaderMs >= 0 {
			t.AckAfterLeaderMs = max(t.UnavailableMs-t.NewLeaderMs, 0) // the watcher polls: it may see the leader after the ack
		}
		after = append(after, t.AckAfterLeaderMs)
		resume = append(resume, t.ConsumerResumeMs)
		fence = append(fence, t.FenceMs)
		leader = append(leader, t.NewLeaderMs)
		unavail = append(unavail, t.UnavailableMs)
		rejoin = append(rejoin, t.RejoinMs)
		kill = append(kill, t.KillCmdMs)
	}
	res.FenceMs, res.NewLeaderMs, res.UnavailableMs, res.RejoinMs = summarizeTrials(fence), summarizeTrials(leader), summarizeTrials(unavail), summarizeTrials(rejoin)
	res.KillCmdMs = summarizeTrials(kill)
	res.ConsumerResumeMs = summarizeTrials(resume)
	res.AckAfterLeaderMs = summarizeTrials(after)
}

// waitHealthy waits until a controller is elected, every broker is alive and
// every partition of topic has a full ISR.
func (r *runner) waitHealthy(ctx context.Context, w *watcher, topic string, timeout time.Duration) (view, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	v, err := w.waitState(ctx, func(md *wire.MetadataResponse) bool {
		return allAlive(md) && (topic == "" || inSync(md, topic))
	})
	if err != nil {
		return v, fmt.Errorf("bench: cluster not healthy after %v: %w", timeout, err)
	}
	return v, nil
}

// failoverTrial kills partition 0's leader once and measures the recovery.
func (r *runner) failoverTrial(ctx context.Context, w *watcher, rw *resumeWatch, topic string, n int, killAt, firstAck *atomic.Int64) (tr FailoverTrial) {
	fc := r.cfg.Failover
	tr = FailoverTrial{Trial: n, Victim: -1, NewLeader: -1, FenceMs: -1, NewLeaderMs: -1, UnavailableMs: -1, RejoinMs: -1, KillCmdMs: -1,
		ConsumerResumeMs: -1}
	v, err := r.waitHealthy(ctx, w, topic, fc.Timeout)
	if err != nil {
		tr.Error = err.Error()
		return tr
	}
	// Settle: a restarted node may take its preferred leaderships back.
	w.quietFor(ctx, 300*time.Millisecond, 3*time.Second)
	if l := w.latest(); l != nil {
		v = *l
	}
	pm, ok := partitionOf(v.md, topic, 0)
	if !ok || pm.Leader < 0 {
		tr.Error = "partition 0 has no leader"
		return tr
	}
	tr.Victim, tr.OldEpoch = pm.Leader, pm.LeaderEpoch
	tr.VictimWasController = v.md.ControllerID == pm.Leader

	firstAck.Store(0)
	logs := r.markTrialLogs()
	defer func() {
		failed := tr.Error != ""
		tr.LogsKept = r.keepIfSlow(logs, "failover", n, longestMs(tr.FenceMs, tr.NewLeaderMs, tr.UnavailableMs, tr.ConsumerResumeMs), failed)
	}()
	fencesBefore, foundBefore := r.fenceCounts(ctx, tr.Victim)
	tr.killAt = time.Now()
	killAt.Store(tr.killAt.UnixNano())
	rw.arm(tr.killAt)
	err = r.target.kill(ctx, tr.Victim)
	tr.KillCmdMs = ms(time.Since(tr.killAt))
	if err != nil {
		killAt.Store(0)
		tr.killAt = time.Time{} // no kill: no unavailability to measure
		tr.KillCmdMs = -1
		tr.Error = err.Error()
		return tr
	}
	sctx, cancel := context.WithTimeout(ctx, fc.Timeout)
	defer cancel()
	if fv, err := w.waitFor(sctx, tr.killAt, func(md *wire.MetadataResponse) bool {
		b, ok := brokerOf(md, tr.Victim)
		return ok && b.State == "fenced"
	}); err == nil {
		tr.fenceAt = fv.at
		tr.FenceMs = ms(fv.at.Sub(tr.killAt))
		fencesAfter, foundAfter := r.fenceCounts(ctx, tr.Victim)
		tr.FencedBy = fencedBy(fencesBefore, fencesAfter)
		if tr.FencedBy == "port_closed" {
			tr.PortFoundBy = fencedBy(foundBefore, foundAfter)
		}
	}
	if lv, err := w.waitFor(sctx, tr.killAt, func(md *wire.MetadataResponse) bool {
		p, ok := partitionOf(md, topic, 0)
		return ok && p.Leader >= 0 && p.Leader != tr.Victim
	}); err == nil {
		tr.leaderAt = lv.at
		tr.NewLeaderMs = ms(lv.at.Sub(tr.killAt))
		p, _ := partitionOf(lv.md, topic, 0)
		tr.NewLeader = p.Leader
	}
	// Wait until partition 0 takes writes again before restarting the victim:
	// an acknowledgement after the new leader showed up (an earlier one may be
	// the victim's last answer, still in flight at the kill). The exact
	// unavailability is computed after the readback (verify).
	if !tr.leaderAt.IsZero() {
		firstAck.Store(0)
		killAt.Store(tr.leaderAt.UnixNano())
	}
	for sctx.Err() == nil && firstAck.Load() == 0 {
		select {
		case <-sctx.Done():
		case <-time.After(time.Millisecond):
		}
	}
	killAt.Store(0)
	if a := firstAck.Load(); a != 0 {
		tr.ackAt = time.Unix(0, a)
		tr.UnavailableMs = ms(tr.ackAt.Sub(tr.killAt))
	}
	if at := rw.wait(sctx); !at.IsZero() {
		tr.ConsumerResumeMs = ms(at.Sub(tr.killAt))
	}
	var errs []string
	if tr.ConsumerResumeMs < 0 {
		errs = append(errs, "the consumer received no record produced after the kill")
	}
	if tr.FenceMs < 0 {
		errs = append(errs, "victim never fenced")
	}
	if tr.NewLeaderMs < 0 {
		errs = append(errs, "no new leader")
	}
	if tr.UnavailableMs < 0 {
		errs = append(errs, "no acknowledgement after the kill")
	}

	restartAt := time.Now()
	if err := r.target.restart(ctx, tr.Victim); err != nil {
		errs = append(errs, "restart: "+err.Error())
	} else {
		rctx, cancel := context.WithTimeout(ctx, fc.Timeout)
		defer cancel()
		victim := tr.Victim
		if rv, err := w.waitFor(rctx, restartAt, func(md *wire.MetadataResponse) bool {
			for _, t := range md.Topics {
				if t.Name != topic {
					continue
				}
				for _, p := range t.Partitions {
					if slices.Contains(p.Replicas, victim) && !slices.Contains(p.ISR, victim) {
						return false
					}
				}
				return true
			}
			return false
		}); err == nil {
			tr.RejoinMs = ms(rv.at.Sub(restartAt))
		} else {
			errs = append(errs, "victim did not rejoin the ISR")
		}
	}
	if len(errs) > 0 {
		tr.Error = fmt.Sprint(errs)
	}
	return tr
}

// verify reads the topic back and checks every acknowledged record. When the
// read-back fails nothing is verified: every acknowledged record counts as
// Unverified (not as 0 lost) and the error is returned.
func (r *runner) verify(ctx context.Context, topic string, res *FailoverResult) error {
	acks, times := res.timeline.snapshot()
	got, err := r.readBack(ctx, topic, ackedEnds(acks))
	if err != nil {
		res.Unverified = int64(len(acks))
		res.unmeasured()
		return err
	}
	res.checkReadback(acks, times, got)
	return nil
}

// unmeasured drops the trials' unavailability figures when the read-back
// did not happen: the live figure (the first partition 0 acknowledgement
// after the new leader showed up) may be the victim's own late answer, and
// only the read-back's leader epochs tell. A trial without a figure cannot
// meet a target.
func (res *FailoverResult) unmeasured() {
	for i := range res.Trials {
		res.Trials[i].UnavailableMs = -1
	}
}

// snapshot copies the acknowledgements and their times.
func (t *ackTimeline) snapshot() ([]ackRec, []time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]ackRec(nil), t.acks...), append([]time.Time(nil), t.times...)
}

// checkReadback compares the acknowledgements (times parallel to acks) with
// the log read back (partition -> offset -> record) and fills in Verified,
// LostRecords, Duplicates and each trial's exact unavailability (and an
// error for a trial whose victim turns out not to have been leading).
// It is pure: a record counts as verified only if the record read back at
// its acknowledged partition and offset is that record; one found only at
// another offset (moved) or not at all (lost) counts as lost.
func (res *FailoverResult) checkReadback(acks []ackRec, times []time.Time, got map[int32]map[int64]readRec) {
	topic := res.Topic
	type where struct {
		part   int32
		offset int64
		epoch  int32
	}
	seen := map[recordID][]where{}
	for part, recs := range got {
		for off, rec := range recs {
			seen[rec.id] = append(seen[rec.id], where{part, off, rec.epoch})
		}
	}
	places := func(ws []where) string {
		slices.SortFunc(ws, func(a, b where) int {
			if a.part != b.part {
				return int(a.part - b.part)
			}
			return cmp.Compare(a.offset, b.offset)
		})
		s := ""
		for _, w := range ws {
			s += fmt.Sprintf(" %s/%d@%d (leader epoch %d)", topic, w.part, w.offset, w.epoch)
		}
		return s
	}
	for id, ws := range seen {
		if len(ws) < 2 {
			continue
		}
		res.Duplicates += int64(len(ws) - 1)
		if len(res.DuplicateExamples) < 10 {
			res.DuplicateExamples = append(res.DuplicateExamples, fmt.Sprintf("producer %d seq %d at%s", id.producer, id.seq, places(ws)))
		}
	}
	for _, a := range acks {
		rec, ok := got[a.part][a.offset]
		if ok && rec.id == a.id {
			res.Verified++
			continue
		}
		res.LostRecords++
		if len(res.LostExamples) >= 10 {
			continue
		}
		s := fmt.Sprintf("%s/%d@%d: acknowledged producer %d seq %d, ", topic, a.part, a.offset, a.id.producer, a.id.seq)
		if ok {
			s += fmt.Sprintf("found producer %d seq %d", rec.id.producer, rec.id.seq)
		} else {
			s += "missing"
		}
		if ws := seen[a.id]; len(ws) > 0 {
			s += "; the acknowledged record is at" + places(ws)
		}
		res.LostExamples = append(res.LostExamples, s)
	}
	// Unavailability, exactly: the first acknowledgement after the kill of a
	// partition 0 record that a later leader epoch wrote, before the next
	// trial's kill (one after it measures that trial, not this one).
	for i := range res.Trials {
		tr := &res.Trials[i]
		if tr.killAt.IsZero() || tr.Victim < 0 {
			continue
		}
		var until time.Time // the next kill after this one; zero: none
		for _, o := range res.Trials {
			if o.killAt.After(tr.killAt) && (until.IsZero() || o.killAt.Before(until)) {
				until = o.killAt
			}
		}
		var first, lastBefore time.Time
		lastEpoch := int32(-1)
		for j, a := range acks {
			at := times[j]
			if a.part != 0 {
				continue
			}
			rec, ok := got[a.part][a.offset]
			if !ok || rec.id != a.id {
				continue
			}
			if !at.After(tr.killAt) {
				if !at.Before(lastBefore) {
					lastBefore, lastEpoch = at, rec.epoch
				}
				continue
			}
			if !until.IsZero() && !at.Before(until) {
				continue
			}
			if rec.epoch > tr.OldEpoch && (first.IsZero() || at.Before(first)) {
				first = at
			}
		}
		if lastEpoch > tr.OldEpoch {
			// The metadata the trial chose its victim from was stale: a later
			// epoch was already acknowledging partition 0 before the kill.
			// Either another node led (the kill hit a follower) or the
			// victim's leadership was renewed (its late answers would pass
			// as the new leader's): either way the figure means nothing.
			msg := fmt.Sprintf("stale metadata: node %d was partition 0's leader in epoch %d, but records of leader epoch %d were acknowledged before the kill (was not partition 0's leader at the kill, or in a later epoch)", tr.Victim, tr.OldEpoch, lastEpoch)
			if tr.Error != "" {
				msg = tr.Error + "; " + msg
			}
			tr.Error = msg
			tr.UnavailableMs = -1
			continue
		}
		if first.IsZero() {
			tr.UnavailableMs = -1
			if !until.IsZero() {
				msg := "no acknowledgement by a later leader epoch before the next trial's kill"
				if tr.Error != "" {
					msg = tr.Error + "; " + msg
				}
				tr.Error = msg
			}
			continue
		}
		tr.ackAt = first
		tr.UnavailableMs = ms(first.Sub(tr.killAt))
	}
}

// readBackProblems lists what the read-back of a run under a steady load
// (failover, rolling) makes fail: nothing acknowledged, acknowledged
// records lost or not verified, records at more than one offset.
func readBackProblems(acked, lost, unverified, duplicates int64) []error {
	var errs []error
	if acked == 0 {
		errs = append(errs, errors.New("no record was acknowledged: nothing to verify"))
	}
	if lost > 0 {
		errs = append(errs, fmt.Errorf("%d acknowledged records lost", lost))
	}
	if unverified > 0 {
		errs = append(errs, fmt.Errorf("%d acknowledged records not verified (the read-back failed)", unverified))
	}
	if duplicates > 0 {
		errs = append(errs, fmt.Errorf("%d records found at more than one offset", duplicates))
	}
	return errs
}

// problems lists what makes a failover run fail: acknowledged records lost
// or not verified, records found at several offsets, failed trials.
func (res *FailoverResult) problems() []error {
	errs := readBackProblems(res.Acked, res.LostRecords, res.Unverified, res.Duplicates)
	for _, t := range res.Trials {
		if t.Error != "" {
			errs = append(errs, fmt.Errorf("trial %d: %s", t.Trial, t.Error))
		}
	}
	return errs
}

// readRec is one record read back: who produced it and under which leader epoch.
type readRec struct {
	id    recordID
	epoch int32
}

// ackedEnds is, per partition, the end offset (HW) that makes every
// acknowledged record readable: the largest acknowledged offset + 1.
func ackedEnds(acks []ackRec) map[int32]int64 {
	out := map[int32]int64{}
	for _, a := range acks {
		out[a.part] = max(out[a.part], a.offset+1)
	}
	return out
}

// endsShort lists the partitions of topic whose end offset is below want's.
func endsShort(topic string, ends map[client.TopicPartition]int64, want map[int32]int64) []string {
	var short []string
	for p, w := range want {
		end, ok := ends[client.TopicPartition{Topic: topic, Partition: p}]
		switch {
		case !ok:
			short = append(short, fmt.Sprintf("%s/%d: no end offset, acknowledged up to %d", topic, p, w-1))
		case end < w:
			short = append(short, fmt.Sprintf("%s/%d: HW %d, acknowledged up to %d", topic, p, end, w-1))
		}
	}
	slices.Sort(short)
	return short
}

// readBackHWWait bounds how long the read-back waits for every partition's
// HW to reach its acknowledged records (a new leader's HW may trail for a
// moment; one that never gets there makes those records count as lost).
const readBackHWWait = 30 * time.Second

// readBack consumes every partition of topic from the beginning to its end
// offset (its HW, once that covers want's offset for the partition or
// readBackHWWait has passed) and returns, per partition, the record at each
// offset.
func (r *runner) readBack(ctx context.Context, topic string, want map[int32]int64) (map[int32]map[int64]readRec, error) {
	cl, err := client.New(ctx, r.clientConfig())
	if err != nil {
		return nil, err
	}
	defer closeClient(cl)
	cons := cl.NewConsumer(client.ConsumerConfig{MaxBytes: 32 << 20, PartitionMaxBytes: 4 << 20})
	defer cons.Close()
	tps, err := cons.AssignTopic(ctx, topic, client.SeekBeginning)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var ends map[client.TopicPartition]int64
	deadline := time.Now().Add(readBackHWWait)
	for {
		if ends, err = cons.EndOffsets(ctx, tps); err != nil {
			return nil, err
		}
		short := endsShort(topic, ends, want)
		if len(short) == 0 {
			break
		}
		if time.Now().After(deadline) {
			r.log.Warn("read-back: HW below acknowledged records", "topic", topic, "partitions", short)
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("bench: read back %s: %w", topic, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	out := map[int32]map[int64]readRec{}
	done := func() bool {
		for _, tp := range tps {
			if pos, _ := cons.Position(tp); pos < ends[tp] {
				return false
			}
		}
		return true
	}
	for _, tp := range tps {
		out[tp.Partition] = map[int64]readRec{}
	}
	for !done() {
		msgs, err := cons.Poll(ctx)
		if err != nil {
			return nil, fmt.Errorf("bench: read back %s: %w", topic, err)
		}
		for _, m := range msgs {
			if _, id, err := parsePayload(m.Value); err == nil {
				out[m.Partition][m.Offset] = readRec{id: id, epoch: m.LeaderEpoch}
			}
		}
	}
	return out, nil
}

// fenceCounts sums the fences by cause, and the port_closed ones by what
// found the port, that the local nodes other than except have counted as
// controllers; nil when unknown (not a local cluster, or a scrape failed).
func (r *runner) fenceCounts(ctx context.Context, except int32) (byCause, portFoundBy map[string]uint64) {
	lt, ok := r.target.(*localTarget)
	if !ok {
		return nil, nil
	}
	addrs := lt.metricsAddrs()
	delete(addrs, except)
	c, err := scrapeNodes(ctx, addrs)
	if err != nil || c == nil {
		return nil, nil
	}
	return addCounts(nil, c.fences), addCounts(nil, c.portFoundBy)
}

// fencedBy is the one cause whose count rose from before to after ("" when
// either is unknown, or none or several rose).
func fencedBy(before, after map[string]uint64) string {
	if before == nil || after == nil {
		return ""
	}
	cause := ""
	for k, n := range after {
		if n > before[k] {
			if cause != "" {
				return ""
			}
			cause = k
		}
	}
	return cause
}
