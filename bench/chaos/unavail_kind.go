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

// windowSlack is how early a window may start before the fault it is put
// down to: a record sent just before the fault hit may wait out all of it.
const windowSlack = 100 * time.Millisecond

// longestByKind puts each unavailability window down to the fault that was
// in effect when it started: the last applied fault that began no later
// than windowSlack after the window's start, if the window started before
// the cluster was ready again after that fault (At .. Healed+Healthy, plus
// windowSlack). Faults follow each other closely, so a window that merely
// overlaps a later fault is not put down to it. It returns, by kind as
// applied, the longest window put down to a fault of that kind.
func longestByKind(events []Event, windows []Window, start time.Time) map[Kind]KindWindow {
	var applied []Event
	for _, e := range events {
		if e.Victim != 0 && !e.NotApplied {
			applied = append(applied, e)
		}
	}
	out := map[Kind]KindWindow{}
	for _, w := range windows {
		at := w.Start.Sub(start)
		var cause *Event
		for i := range applied {
			if applied[i].At <= at+windowSlack {
				cause = &applied[i]
			}
		}
		if cause == nil || at > max(cause.Healed, cause.At)+cause.Healthy+windowSlack {
			continue
		}
		k := cause.applied()
		if cur, ok := out[k]; !ok || w.Len() > cur.Window.Len() {
			out[k] = KindWindow{Window: w, Fault: cause.Fault.N}
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
