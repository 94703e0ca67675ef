package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// ThroughputRound is one round's headline figures when the throughput
// benchmark runs more than once (--rounds N): each round is a full-load run,
// its read-back and a paced run at half its own rate, on a fresh topic. JSON
// names are part of the --json format.
type ThroughputRound struct {
	Round          int          `json:"round"`
	Topic          string       `json:"topic"`
	RecordsPerSec  float64      `json:"records_per_sec"`
	MBPerSec       float64      `json:"mb_per_sec"`
	TransportRatio float64      `json:"transport_ceiling_ratio,omitempty"`
	ProduceLatency Percentiles  `json:"produce_latency_ms"` // full load
	HalfLoadRate   float64      `json:"half_load_records_per_sec,omitempty"`
	HalfLoad       *Percentiles `json:"half_load_produce_latency_ms,omitempty"`
	Changes        Changes      `json:"cluster_changes"`
	FirstError     string       `json:"first_error,omitempty"`
	// StoredPerPayloadByte is the round's ThroughputResult.StoredPerPayloadByte.
	StoredPerPayloadByte float64 `json:"stored_bytes_per_payload_byte,omitempty"`
}

// runThroughputRounds runs the throughput benchmark cfg.Throughput.Rounds
// times and combines the rounds (combineRounds). A round that fails ends the
// series; the rounds so far are still combined and returned with the error.
func (r *runner) runThroughputRounds(ctx context.Context) (*ThroughputResult, error) {
	n := max(r.cfg.Throughput.Rounds, 1)
	var rounds []*ThroughputResult
	var err error
	for i := 1; i <= n && ctx.Err() == nil; i++ {
		r.round = i
		var res *ThroughputResult
		res, err = r.runThroughput(ctx)
		if res != nil {
			rounds = append(rounds, res)
		}
		if err != nil {
			break
		}
	}
	r.round = 0
	if len(rounds) == 0 {
		return nil, err
	}
	return combineRounds(rounds), err
}

// roundPrefix names files a phase writes (profiles, the latency trace) so
// that rounds after the first do not overwrite the first's: "" in a single
// round and in round 1, "round2." and so on after it.
func (r *runner) roundPrefix() string {
	if r.round <= 1 {
		return ""
	}
	return fmt.Sprintf("round%d.", r.round)
}

// roundLabel is a progress bar's label: name, and the round with --rounds.
func (r *runner) roundLabel(name string) string {
	if r.round == 0 || r.cfg.Throughput.Rounds <= 1 {
		return name
	}
	return fmt.Sprintf("%s %d/%d", name, r.round, r.cfg.Throughput.Rounds)
}

// roundPath is path with roundPrefix put before its file name.
func (r *runner) roundPath(path string) string {
	if p := r.roundPrefix(); p != "" {
		return filepath.Join(filepath.Dir(path), p+filepath.Base(path))
	}
	return path
}

// combineRounds reduces rounds to one result. One round is returned as it
// is. With more, every headline figure is the median of the rounds' values,
// each figure on its own (the upper median of an even count, as the
// transport baseline's): records/s, MB/s, the full-load and half-load
// latency percentiles, end-to-end latency, consume throughput. Records,
// failures, seconds and cluster changes are summed over the rounds (the
// no-fault target counts every change in any round). CPU (and CPU per MB),
// message counts, QUIC loss, CPU slowdowns and the stored bytes are those
// of the round whose MB/s is the median. Latency maxima are the largest of
// any round. Topic lists the rounds' topics, comma-separated. Rounds lists
// each round's figures.
func combineRounds(rounds []*ThroughputResult) *ThroughputResult {
	if len(rounds) == 1 {
		return rounds[0]
	}
	byMB := append([]*ThroughputResult(nil), rounds...)
	sort.SliceStable(byMB, func(i, j int) bool { return byMB[i].MBPerSec < byMB[j].MBPerSec })
	out := *byMB[len(byMB)/2]
	out.Topic = strings.Join(mapRounds(rounds, func(t *ThroughputResult) string { return t.Topic }), ",")
	out.RecordsPerSec = medianOf(mapRounds(rounds, func(t *ThroughputResult) float64 { return t.RecordsPerSec }))
	out.MBPerSec = medianOf(mapRounds(rounds, func(t *ThroughputResult) float64 { return t.MBPerSec }))
	out.ReplicatedMBPerSec = medianOf(mapRounds(rounds, func(t *ThroughputResult) float64 { return t.ReplicatedMBPerSec }))
	out.ProduceLatency = medianPercentiles(mapRounds(rounds, func(t *ThroughputResult) Percentiles { return t.ProduceLatency }))
	out.Records, out.Failed, out.Seconds, out.Changes, out.FirstError = 0, 0, 0, Changes{}, ""
	out.ChangeReasons, out.ChangeReasonsMore = nil, 0
	var halves []*HalfLoad
	var consumes []*Consume
	for _, t := range rounds {
		out.Records += t.Records
		out.Failed += t.Failed
		out.Seconds += t.Seconds
		out.Changes = out.Changes.plus(t.Changes)
		for _, why := range t.ChangeReasons {
			if len(out.ChangeReasons) < maxChangeReasons {
				out.ChangeReasons = append(out.ChangeReasons, fmt.Sprintf("round %d: %s", len(out.Rounds)+1, why))
			} else {
				out.ChangeReasonsMore++
			}
		}
		out.ChangeReasonsMore += t.ChangeReasonsMore
		if out.FirstError == "" {
			out.FirstError = t.FirstError
		}
		if t.HalfLoad != nil {
			halves = append(halves, t.HalfLoad)
		}
		if t.Consume != nil {
			consumes = append(consumes, t.Consume)
		}
		out.Rounds = append(out.Rounds, t.summary(len(out.Rounds)+1))
	}
	out.HalfLoad = combineHalfLoads(halves, out.HalfLoad)
	out.Consume = combineConsumes(consumes)
	return &out
}

// combineHalfLoads is combineRounds for the paced runs: medians of the
// rates and latencies, sums of the counts, the rest from base (the median
// round's, when it has one).
func combineHalfLoads(hs []*HalfLoad, base *HalfLoad) *HalfLoad {
	if len(hs) == 0 {
		return nil
	}
	if base == nil {
		base = hs[len(hs)/2]
	}
	out := *base
	out.TargetRate = medianOf(mapRounds(hs, func(h *HalfLoad) float64 { return h.TargetRate }))
	out.RecordsPerSec = medianOf(mapRounds(hs, func(h *HalfLoad) float64 { return h.RecordsPerSec }))
	out.ProduceLatency = medianPercentiles(mapRounds(hs, func(h *HalfLoad) Percentiles { return h.ProduceLatency }))
	out.EndToEnd = medianPercentiles(mapRounds(hs, func(h *HalfLoad) Percentiles { return h.EndToEnd }))
	out.Stages = combineStages(mapRounds(hs, func(h *HalfLoad) *LatencyStages { return h.Stages }))
	out.Records, out.Failed, out.Consumed, out.ClearOf = 0, 0, 0, 0
	var clear []Percentiles
	for _, h := range hs {
		out.Records += h.Records
		out.Failed += h.Failed
		out.Consumed += h.Consumed
		if h.ClearLatency != nil {
			clear = append(clear, *h.ClearLatency)
			out.ClearOf += h.ClearOf
		}
	}
	out.ClearLatency = nil
	if len(clear) == len(hs) {
		c := medianPercentiles(clear)
		out.ClearLatency = &c
	} else {
		out.ClearOf = 0
	}
	return &out
}

// combineConsumes is combineRounds for the read-backs.
func combineConsumes(cs []*Consume) *Consume {
	if len(cs) == 0 {
		return nil
	}
	out := Consume{
		RecordsPerSec: medianOf(mapRounds(cs, func(c *Consume) float64 { return c.RecordsPerSec })),
		MBPerSec:      medianOf(mapRounds(cs, func(c *Consume) float64 { return c.MBPerSec })),
	}
	for _, c := range cs {
		out.Records += c.Records
		out.Seconds += c.Seconds
	}
	return &out
}

// summary is t's line in ThroughputResult.Rounds.
func (t *ThroughputResult) summary(round int) ThroughputRound {
	s := ThroughputRound{Round: round, Topic: t.Topic, RecordsPerSec: t.RecordsPerSec, MBPerSec: t.MBPerSec,
		StoredPerPayloadByte: t.StoredPerPayloadByte, ProduceLatency: t.ProduceLatency, Changes: t.Changes, FirstError: t.FirstError}
	if h := t.HalfLoad; h != nil {
		p := h.ProduceLatency
		s.HalfLoadRate, s.HalfLoad = h.RecordsPerSec, &p
	}
	return s
}

// medianPercentiles is the median of each percentile and of the mean over
// ps; the count is summed and the max is the largest (the worst record of
// any round).
func medianPercentiles(ps []Percentiles) Percentiles {
	field := func(f func(Percentiles) float64) float64 { return medianOf(mapRounds(ps, f)) }
	out := Percentiles{
		Mean: field(func(p Percentiles) float64 { return p.Mean }),
		P50:  field(func(p Percentiles) float64 { return p.P50 }),
		P95:  field(func(p Percentiles) float64 { return p.P95 }),
		P99:  field(func(p Percentiles) float64 { return p.P99 }),
		P999: field(func(p Percentiles) float64 { return p.P999 }),
	}
	for _, p := range ps {
		out.Count += p.Count
		out.Max = max(out.Max, p.Max)
	}
	return out
}

// plus is the sum of two change counts.
func (c Changes) plus(o Changes) Changes {
	return Changes{
		ISRShrinks: c.ISRShrinks + o.ISRShrinks, ISRExpands: c.ISRExpands + o.ISRExpands,
		LeaderChanges: c.LeaderChanges + o.LeaderChanges, Fencings: c.Fencings + o.Fencings,
		Controllers: c.Controllers + o.Controllers, Unseen: c.Unseen + o.Unseen,
	}
}

func mapRounds[T, R any](xs []T, f func(T) R) []R {
	out := make([]R, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}
