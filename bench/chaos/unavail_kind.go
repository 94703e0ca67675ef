package chaos

import (
	"slices"
	"time"

	"paymentlog/bench/localcluster"
)

// KindWindow is the longest unavailability window that overlapped a fault
// of one kind, and that fault's number.
type KindWindow struct {
	Window Window
	Fault  int
}

// longestByKind attributes unavailability windows to faults: a window
// counts for every applied fault it overlaps, from the fault's start to the
// cluster being ready again after it (At .. Healed+Healthy). It returns, by
// kind as applied, the longest such window.
func longestByKind(events []Event, windows []Window, start time.Time) map[Kind]KindWindow {
	out := map[Kind]KindWindow{}
	for _, e := range events {
		if e.Victim == 0 || e.NotApplied {
			continue
		}
		from := start.Add(e.At)
		to := start.Add(max(e.Healed, e.At) + e.Healthy)
		k := e.applied()
		for _, w := range windows {
			if w.End.Before(from) || w.Start.After(to) {
				continue
			}
			if cur, ok := out[k]; !ok || w.Len() > cur.Window.Len() {
				out[k] = KindWindow{Window: w, Fault: e.Fault.N}
			}
		}
	}
	return out
}

// reportKinds are the kinds a summary lists: every default kind, and the
// link kinds the run scheduled or applied.
func (r *Result) reportKinds() []Kind {
	var out []Kind
	for _, k := range KnownKinds {
		if slices.Contains(AllKinds, k) || slices.Contains(r.Plan.Kinds, k) || r.Counts[k] > 0 {
			out = append(out, k)
		}
	}
	return out
}

// oneWayByDir counts the applied one-way faults by direction.
func oneWayByDir(events []Event) (out, in int) {
	for _, e := range events {
		if e.Victim == 0 || e.NotApplied || e.Fault.Kind != OneWay {
			continue
		}
		if e.Fault.Dir == localcluster.Outbound {
			out++
		} else {
			in++
		}
	}
	return out, in
}
