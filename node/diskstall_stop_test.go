package node

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// stopLine opens the line a node logs for each stop (explainGap).
const stopLine = `msg="this process was stopped (SIGSTOP or SIGTSTP) and continued`

// stopRig is a stallRig whose node reads SIGCONT: the test plays the
// signal with cont.
func stopRig(t *testing.T) *stallRig {
	r := newStallRig(t)
	r.n.stall.contCh = make(chan struct{}, 1)
	r.n.stall.watchingCont.Store(true)
	return r
}

// cont plays a SIGCONT read now (by the rig's clock).
func (r *stallRig) cont() { r.n.stall.continued(time.Unix(0, r.ns.Load())) }

// look makes a heartbeat tick's look every 100 ms for d, and reports
// whether any found the node aside.
func (r *stallRig) look(d time.Duration) (aside bool) {
	for end := r.ns.Load() + int64(d); r.ns.Load() < end; {
		r.advance(100 * time.Millisecond)
		aside = r.n.diskStalled() || aside
	}
	return aside
}

// TestStoppedProcessIsNoDiskStall: an fsync in flight while the process
// is stopped (SIGSTOP) for longer than the timeout, whether a look finds
// it in flight after the SIGCONT or it returned before any look, is no
// stall; the stop is logged. A stall after it is still one.
func TestStoppedProcessIsNoDiskStall(t *testing.T) {
	r := stopRig(t)
	r.n.diskStalled()

	release := r.block()
	r.advance(2200 * time.Millisecond) // stopped: no look
	r.cont()
	if r.n.diskStalled() || r.look(300*time.Millisecond) {
		t.Fatal("an fsync in flight across a 2.2 s stop counted as a stall")
	}
	release()

	release = r.block()
	r.advance(2500 * time.Millisecond)
	release() // returned before the first look after the stop
	r.cont()
	if r.n.diskStalled() || r.look(300*time.Millisecond) {
		t.Fatal("an fsync that returned across a 2.5 s stop counted as a stall")
	}
	if s := r.n.diskStallStats(); s.stalls != 0 || s.holdDowns != 0 {
		t.Fatalf("stats after two stops %+v, want no stall", s)
	}
	out := r.logs()
	if c := strings.Count(out, stopLine); c != 2 {
		t.Fatalf("%d lines for two stops, want 2:\n%s", c, out)
	}
	if strings.Contains(out, "disk stalled") {
		t.Fatalf("a stop logged as a stall:\n%s", out)
	}

	// A disk that stalls after the stops is still seen.
	release = r.block()
	if !r.look(2500 * time.Millisecond) {
		t.Fatal("an fsync in flight 2.5 s after the stops, looked at every 100 ms: no stall")
	}
	release()
	if r.n.diskStallStats().stalls != 1 {
		t.Fatalf("stalls %d, want 1", r.n.diskStallStats().stalls)
	}
}

// TestStopWithinALookIsNoDiskStall: the stop can land anywhere in a
// look, also after its first question about a gap: a CI run paused a node
// for 3 s just there, and an fdatasync in flight across the pause (3.0 s)
// counted as a stall no look saw. Here a 3 s stop lands before each of
// the look's clock reads in turn (so between any two, and a stop after
// the last is the next look's gap), with an fsync in flight that returns
// after the stop or within it: no stall, one stop logged.
func TestStopWithinALookIsNoDiskStall(t *testing.T) {
	for _, returns := range []bool{false, true} {
		k := 1
		for ; ; k++ {
			r := stopRig(t)
			r.n.diskStalled()
			release := sync.OnceFunc(r.block())
			r.advance(100 * time.Millisecond)
			var reads atomic.Int32
			fired := false
			stop := func() {
				if reads.Add(1) != int32(k) {
					return
				}
				fired = true
				r.advance(3 * time.Second)
				if returns {
					release() // (its clock read counts past k)
				}
				r.cont()
			}
			r.onRead.Store(&stop)
			r.n.diskStalled()
			r.onRead.Store(nil)
			if !fired { // k is past the look's last read
				release()
				break
			}
			if r.look(300 * time.Millisecond) {
				t.Fatalf("returns within the stop %v: a stop before the look's clock read %d counted as a stall", returns, k)
			}
			release()
			if r.look(100*time.Millisecond) || r.n.diskStallStats().stalls != 0 {
				t.Fatalf("returns within the stop %v: a stop before the look's clock read %d counted as a stall: %+v\n%s", returns, k, r.n.diskStallStats(), r.logs())
			}
			if c := strings.Count(r.logs(), stopLine); c != 1 {
				t.Fatalf("returns within the stop %v, stop before read %d: %d lines for one stop, want 1:\n%s", returns, k, c, r.logs())
			}
		}
		if k < 4 {
			t.Fatalf("returns within the stop %v: the look read the clock %d times, want at least 3", returns, k-1)
		}
	}
}

// TestLateContinueNoticeIsOneStop: the look's first question may wait for
// the SIGCONT's notice (read on another goroutine) longer than a short
// timeout; that wait, the process running, is no second stop.
func TestLateContinueNoticeIsOneStop(t *testing.T) {
	r := stopRig(t)
	r.n.cfg.DiskStallTimeout = 300 * time.Millisecond
	r.n.diskStalled()
	release := r.block()
	defer release()
	r.advance(time.Second) // stopped
	var reads atomic.Int32
	late := func() {
		switch reads.Add(1) {
		case 1: // the look's start: the notice comes 400 ms on
			r.n.stall.continued(time.Unix(0, r.ns.Load()+int64(400*time.Millisecond)))
		case 2: // the look goes on after the wait
			r.advance(400 * time.Millisecond)
		}
	}
	r.onRead.Store(&late)
	aside := r.n.diskStalled()
	r.onRead.Store(nil)
	if aside || r.n.diskStallStats().stalls != 0 {
		t.Fatalf("an fsync in flight across the stop counted as a stall:\n%s", r.logs())
	}
	if c := strings.Count(r.logs(), stopLine); c != 1 {
		t.Fatalf("%d lines for one stop, want 1:\n%s", c, r.logs())
	}
}

// TestGapWithoutContinueIsAStall: the whole process blocked on its disk
// gets no SIGCONT: the look after the gap waits for one (continueWait),
// then counts the operation no look saw as before.
func TestGapWithoutContinueIsAStall(t *testing.T) {
	r := stopRig(t)
	r.n.diskStalled()
	release := r.block()
	r.advance(3 * time.Second)
	release()
	r.n.diskStalled()
	if s := r.n.diskStallStats(); s.stalls != 1 {
		t.Fatalf("stalls %d after a 3 s gap with no SIGCONT, want 1", s.stalls)
	}
	if out := r.logs(); !strings.Contains(out, "disk stalled while this whole process was blocked") || strings.Contains(out, "this process was stopped") {
		t.Fatalf("logged:\n%s", out)
	}
}

// TestContinueWithoutGapKeepsTheStall: a SIGCONT sent to a running
// process (no gap in the looks) does not end a stall in progress.
func TestContinueWithoutGapKeepsTheStall(t *testing.T) {
	r := stopRig(t)
	r.n.diskStalled()
	release := r.block()
	if !r.look(2500 * time.Millisecond) {
		t.Fatal("no stall")
	}
	r.cont()
	if !r.look(300 * time.Millisecond) {
		t.Fatal("a SIGCONT to the running process ended the stall while the fsync hung")
	}
	release()
	if r.look(100 * time.Millisecond) {
		t.Fatal("aside after the fsync returned")
	}
}

// awaitContinue returns a SIGCONT read while it waits, or before.
func TestAwaitContinue(t *testing.T) {
	s := &diskStall{contCh: make(chan struct{}, 1)}
	before := time.Unix(100, 0)
	if _, ok := s.awaitContinue(before, time.Millisecond); ok {
		t.Fatal("a SIGCONT found with none read")
	}
	go s.continued(time.Unix(101, 0))
	if c, ok := s.awaitContinue(before, time.Minute); !ok || !c.Equal(time.Unix(101, 0)) {
		t.Fatalf("awaitContinue: %v %v, want 101 s", c, ok)
	}
	if _, ok := s.awaitContinue(time.Unix(102, 0), time.Millisecond); ok {
		t.Fatal("a SIGCONT before the gap explains it")
	}
}
