package node

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// A process stopped by job control does not have a stalled disk.
//
// SIGSTOP (a debugger, `kill -STOP`, the chaos runs' pause fault) stops
// every thread. An operation in flight when it came returns only after
// SIGCONT, and the detector, stopped too, then finds it older than the
// timeout: in flight at its first look, or returned with no look having
// seen it (the rule for a whole process blocked on its disk). A chaos run
// paused the active controller for 2.2 s twice within 16 s: two "stalls",
// and the second a 30 s hold-down, the node fenced all along.
//
// So the node reads SIGCONT (watchContinue), and a look that finds the
// previous one longer ago than the timeout (the process did not run)
// first asks whether a SIGCONT came since; if one did, the span from the
// previous look to the SIGCONT was a stop, and the time an operation
// spent in it does not count towards the timeout. The stop can also land
// inside a look, after that first question and before the look reads
// its clock for the last time (a CI run caught one: an fdatasync that
// took 3.0 s across a 3 s pause counted as a stall no look saw), so the
// look asks again at its end about the span since its start (or since
// the SIGCONT its first question waited for), and looks again at the disk
// if that was a stop. The signal is read on another goroutine, which may
// run after the detector's first look after the stop: that look waits for
// it, up to continueWait. A SIGCONT with no gap in the looks (sent to a
// running process) changes nothing, and a process blocked on its disk
// gets none: its gap is still a stall. The span starts at the last look
// before the stop, so up to a heartbeat interval before it is given up
// too.

// continueWait bounds a look's wait for the SIGCONT after a gap in the
// looks. 50 ms was not always enough: a node paused 3.4 s in a chaos run
// (the machine busy, every goroutine of the node runnable at once after
// the SIGCONT) read it later than that, and the look counted a stall. A
// process frozen whole by its disk has been frozen for longer than the
// timeout already: its stall is counted this much later.
const continueWait = 500 * time.Millisecond

// stopSpan is a span the process was stopped in (from the last look
// before it to the SIGCONT that ended it), by the detector's clock.
type stopSpan struct{ from, to time.Time }

// stopSpans are the last few stops, oldest first: an operation may span
// more than one (it returned before the first look after the second).
type stopSpans [4]stopSpan

// add records a stop after the others.
func (ss *stopSpans) add(sp stopSpan) {
	copy(ss[:], ss[1:])
	ss[len(ss)-1] = sp
}

// overlap returns how much of [from, to] lies in the stops.
func (ss *stopSpans) overlap(from, to time.Time) time.Duration {
	var d time.Duration
	for _, sp := range ss {
		d += sp.overlap(from, to)
	}
	return d
}

// overlap returns how much of [from, to] lies in the span.
func (sp stopSpan) overlap(from, to time.Time) time.Duration {
	lo, hi := from, to
	if sp.from.After(lo) {
		lo = sp.from
	}
	if sp.to.Before(hi) {
		hi = sp.to
	}
	if !hi.After(lo) {
		return 0
	}
	return hi.Sub(lo)
}

// watchContinue records every SIGCONT this process receives until ctx
// ends.
func (n *Node) watchContinue(ctx context.Context) error {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGCONT)
	defer signal.Stop(ch)
	n.stall.watchingCont.Store(true)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ch:
			n.stall.continued(n.stall.clock())
		}
	}
}

// continued records a SIGCONT received at at.
func (s *diskStall) continued(at time.Time) {
	s.contNs.Store(at.UnixNano())
	select {
	case s.contCh <- struct{}{}:
	default:
	}
}

// lastContinue returns when the last SIGCONT was received (zero: never).
func (s *diskStall) lastContinue() time.Time {
	ns := s.contNs.Load()
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// awaitContinue waits up to d for a SIGCONT received after after, and
// returns when it was.
func (s *diskStall) awaitContinue(after time.Time, d time.Duration) (time.Time, bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		if c := s.lastContinue(); c.After(after) {
			return c, true
		}
		select {
		case <-s.contCh:
		case <-t.C:
			c := s.lastContinue()
			return c, c.After(after)
		}
	}
}

// explainGap explains a gap in the looks: when from (the previous look,
// or this look's start) is longer than the timeout before to and a SIGCONT
// came (or comes, within continueWait) after from, the span to it was a
// stop, recorded and logged once. It returns the SIGCONT's time, and
// whether it recorded a stop.
func (n *Node) explainGap(from, to time.Time) (time.Time, bool) {
	s := &n.stall
	if !s.watchingCont.Load() || from.IsZero() || to.Sub(from) <= n.cfg.DiskStallTimeout {
		return time.Time{}, false
	}
	c, ok := s.awaitContinue(from, continueWait)
	if !ok {
		return time.Time{}, false
	}
	s.mu.Lock()
	s.mu.stops.add(stopSpan{from: from, to: c})
	s.mu.Unlock()
	n.log.Info("this process was stopped (SIGSTOP or SIGTSTP) and continued: the time stopped does not count towards --disk-stall-timeout",
		"stopped_for_at_most", c.Sub(from).Round(time.Millisecond))
	return c, true
}

// stoppedWithin returns how much of [from, to] the process spent in its
// last stops.
func (s *diskStall) stoppedWithin(from, to time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.stops.overlap(from, to)
}
