package bench

import (
	"maps"
	"slices"
	"time"

	"paymentlog/wire"
)

// The rolling benchmark's pure figures: the order of a roll, and what a
// restart cost the writers within its window. A restart's window runs from
// its SIGTERM to the next restart's SIGTERM (the last one's: to the end of
// the load), so everything the roll did to the writers falls in exactly one
// window, the leaderships moving back to a node after it was ready included.

// rollOrder is the order a roll restarts nodes in: by id, the active
// controller last (its restart costs a controller election, once; -1 or an
// id not in ids: none is moved).
func rollOrder(ids []int32, controller int32) []int32 {
	out := slices.Clone(ids)
	slices.Sort(out)
	if i := slices.Index(out, controller); i >= 0 {
		out = append(append(out[:i:i], out[i+1:]...), controller)
	}
	return out
}

// window is one restart's stretch of the run: [from, to).
type window struct{ from, to time.Time }

// windowsOf turns the restarts' SIGTERM instants (in order) and the load's
// end into their windows.
func windowsOf(stops []time.Time, end time.Time) []window {
	out := make([]window, len(stops))
	for i, s := range stops {
		to := end
		if i+1 < len(stops) {
			to = stops[i+1]
		}
		out[i] = window{s, to}
	}
	return out
}

// ackTimes lists, per partition and in time order, when each acknowledged
// record that the read-back found at its offset (got) was acknowledged:
// the writes that count. A record acknowledged but lost does not.
func ackTimes(acks []ackRec, times []time.Time, got map[int32]map[int64]readRec) map[int32][]time.Time {
	out := map[int32][]time.Time{}
	for i, a := range acks {
		if rec, ok := got[a.part][a.offset]; ok && rec.id == a.id {
			out[a.part] = append(out[a.part], times[i])
		}
	}
	for p := range out {
		slices.SortFunc(out[p], func(a, b time.Time) int { return a.Compare(b) })
	}
	return out
}

// longestGap is the longest time between two consecutive acknowledgements
// of one partition (times, sorted) that ends in w, its second one falling
// in it: the partition's unavailability in the window, as the writers saw
// it. A gap is whole, from the last acknowledgement before it even when
// that came before w.from (a stop's stall begins at the partition's last
// write before the SIGTERM), and belongs to the window where writes
// resumed; one still open at w.to with no acknowledgement after it at all
// runs to w.to, and one open at w.from (none before it) from w.from. It
// returns the gap's length and its ends (the earliest of equal ones).
func longestGap(times []time.Time, w window) (time.Duration, window) {
	i, _ := slices.BinarySearchFunc(times, w.from, func(t, x time.Time) int { return t.Compare(x) })
	prev := w.from
	if i > 0 {
		prev = times[i-1]
	}
	var longest time.Duration
	var gap window
	take := func(from, to time.Time) {
		if d := to.Sub(from); d > longest {
			longest, gap = d, window{from, to}
		}
	}
	for _, t := range times[i:] {
		if !t.Before(w.to) {
			return longest, gap // the rest is the next window's
		}
		take(prev, t)
		prev = t
	}
	take(prev, w.to) // never acknowledged again
	return longest, gap
}

// latencyAt is one acknowledged record's produce latency, at its
// acknowledgement.
type latencyAt struct {
	at  time.Time
	lat time.Duration
}

// maxLatency is the longest produce latency of the records acknowledged in w.
func maxLatency(lats []latencyAt, w window) time.Duration {
	var m time.Duration
	for _, l := range lats {
		if !l.at.Before(w.from) && l.at.Before(w.to) {
			m = max(m, l.lat)
		}
	}
	return m
}

// countsSince is after less before, per key, without the keys that did
// not grow (failed produce requests by cause over a window).
func countsSince(before, after map[string]uint64) map[string]uint64 {
	out := map[string]uint64{}
	for k, n := range after {
		if d := n - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// addCounts adds b's counts to a (a may be nil) and returns it.
func addCounts(a, b map[string]uint64) map[string]uint64 {
	if a == nil {
		a = map[string]uint64{}
	}
	for k, n := range b {
		a[k] += n
	}
	return a
}

// belowMinISR is how long, within w, the metadata views showed some
// partition of topic with fewer than minISR replicas in its ISR (acks=all
// writes refused there), and which partitions. views are in arrival order;
// each holds until the next (the last one before w.from holds from w.from,
// the last one until w.to).
func belowMinISR(views []view, topic string, minISR int, w window) (time.Duration, []int32) {
	var total time.Duration
	parts := map[int32]bool{}
	for i, v := range views {
		from, to := v.at, w.to
		if i+1 < len(views) && views[i+1].at.Before(to) {
			to = views[i+1].at
		}
		if from.Before(w.from) {
			from = w.from
		}
		if !from.Before(to) {
			continue
		}
		below := false
		for _, t := range v.md.Topics {
			if t.Name != topic {
				continue
			}
			for _, p := range t.Partitions {
				if len(p.ISR) < minISR {
					below = true
					parts[p.Partition] = true
				}
			}
		}
		if below {
			total += to.Sub(from)
		}
	}
	return total, slices.Sorted(maps.Keys(parts))
}

// viewsOf copies the watcher's views (in arrival order).
func (w *watcher) viewsOf() []view {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.mu.views)
}

// controllerOf is the active controller in md (-1: none).
func controllerOf(md *wire.MetadataResponse) int32 {
	if md == nil {
		return -1
	}
	return md.ControllerID
}
