package replica_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"paymentlog/node/replica"
)

// TestRandomFaults drives the scenario simulator with random produces,
// fetches, ticks, ISR changes, clean and forced leader changes, crashes and
// restarts, metadata delivered to a random subset of the nodes at a time
// (so zombie leaders and followers of stale leaders are common), and checks
// the promise after every step.
func TestRandomFaults(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 50
	}
	for seed := range uint64(seeds) {
		runRandom(t, seed, 250)
		if t.Failed() {
			return
		}
	}
}

func runRandom(t *testing.T, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, 11))
	s := &sim{t: t}
	var log strings.Builder
	run := func(cmd string) string {
		out := s.run(cmd)
		fmt.Fprintf(&log, "%s\n%s", cmd, out)
		return out
	}
	run("init replicas=1,2,3 minisr=2 lag=10s")
	run("elect leader=1")
	clock := 0
	live := func() []int32 {
		var out []int32
		for _, id := range s.sortedIDs() {
			if !s.nodes[id].down {
				out = append(out, id)
			}
		}
		return out
	}
	pick := func(ids []int32) int32 { return ids[rng.IntN(len(ids))] }
	subset := func() string {
		var to []string
		for _, id := range s.sortedIDs() {
			if rng.IntN(3) > 0 {
				to = append(to, fmt.Sprint(id))
			}
		}
		if len(to) == 0 {
			return ""
		}
		return " to=" + strings.Join(to, ",")
	}
	isrString := func(isr []int32) string {
		var p []string
		for _, id := range isr {
			p = append(p, fmt.Sprint(id))
		}
		return strings.Join(p, ",")
	}
	// electFrom elects a live member of isr (other than not), or takes the
	// partition offline keeping isr.
	electFrom := func(isr []int32, not int32) {
		var cands []int32
		for _, id := range isr {
			if id != not && !s.nodes[id].down {
				cands = append(cands, id)
			}
		}
		if len(cands) == 0 {
			run(fmt.Sprintf("elect leader=-1 isr=%s%s", isrString(isr), subset()))
			return
		}
		run(fmt.Sprintf("elect leader=%d isr=%s%s", pick(cands), isrString(isr), subset()))
	}
	for step := range steps {
		switch k := rng.IntN(20); {
		case k < 5: // produce on whichever node believes it leads
			var leaders []int32
			for _, id := range live() {
				if s.nodes[id].r.Role() == replica.RoleLeader {
					leaders = append(leaders, id)
				}
			}
			if len(leaders) > 0 {
				run(fmt.Sprintf("produce node=%d id=s%d-%d vals=v%d", pick(leaders), seed, step, step))
			}
		case k < 11:
			if l := live(); len(l) > 0 {
				run(fmt.Sprintf("fetch node=%d", pick(l)))
			}
		case k < 13:
			clock += rng.IntN(6)
			if l := live(); len(l) > 0 {
				run(fmt.Sprintf("tick node=%d at=%ds", pick(l), clock))
			}
		case k < 14:
			if l := live(); len(l) > 0 {
				reject := ""
				if rng.IntN(4) == 0 {
					reject = " reject"
				}
				run(fmt.Sprintf("alter node=%d%s", pick(l), reject))
			}
		case k < 15: // a clean leader change (preferred leader, controlled shutdown)
			electFrom(s.meta.ISR, s.meta.Leader)
		case k < 16: // a node dies; the controller fences it
			l := live()
			if len(l) < 2 {
				continue
			}
			v := pick(l)
			run(fmt.Sprintf("crash node=%d", v))
			isr := slices.DeleteFunc(slices.Clone(s.meta.ISR), func(id int32) bool { return id == v })
			if len(isr) == 0 {
				isr = s.meta.ISR
			}
			if s.meta.Leader == v || s.meta.Leader < 0 {
				electFrom(isr, v)
			} else if len(isr) != len(s.meta.ISR) {
				run(fmt.Sprintf("isr isr=%s%s", isrString(isr), subset()))
			}
		case k < 17:
			for _, id := range s.sortedIDs() {
				if s.nodes[id].down {
					run(fmt.Sprintf("restart node=%d", id))
					run(fmt.Sprintf("deliver to=%d", id))
					if s.meta.Leader < 0 && slices.Contains(s.meta.ISR, id) {
						electFrom(s.meta.ISR, -1)
					}
					break
				}
			}
		default: // late metadata
			run("deliver" + subset())
		}
		if out := s.run("check"); out != "ok\n" {
			t.Fatalf("seed %d step %d:\n%s\n--- transcript:\n%s", seed, step, out, log.String())
		}
	}
}
