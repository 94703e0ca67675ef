package bench

import (
	"runtime"
	"slices"
	"sync/atomic"
	"time"
)

// The CPU speed probe. On the 2-vCPU VMs this project is measured on, the
// CPU itself runs about ten times slower for 20–80 ms every 1–3 s, on every
// vCPU at once, whether the machine is busy or idle. The guest sees no steal
// time and no interrupts for it: a fixed piece of arithmetic simply takes ten
// times as long, then speeds up again over ~30 ms, like a frequency ramp
// (README, "The latency tail comes from the machine's CPU slowing down by
// itself"). Every request in flight then waits; the windows cover 1–4% of a
// run, more than the 1% a p99 leaves out.
//
// The probe times a fixed piece of pure arithmetic (no memory traffic, no
// system calls) every probeEvery on its own OS thread and keeps every
// sample; slowWindows finds the windows afterwards. A sample inflated by
// the scheduler (the probe's thread preempted mid-chunk) is a single slow
// sample, so only runs of consecutive slow samples count as a window.
const (
	probeEvery     = 2 * time.Millisecond
	probeChunk     = 10 * time.Microsecond // calibrated work per sample
	slowFactor     = 3.0                   // a sample this many times the run's median is slow
	slowMinSamples = 3                     // consecutive slow samples that make a window (~6 ms)
)

// speedSample is one timed chunk: when it started (unix µs) and how long it
// took (ns).
type speedSample struct {
	start     int64
	ns        int64
	reclaimNs int64 // the kdamond threads' CPU time so far (reclaimWatch); 0 without any
}

// SlowWindow is one window in which the CPU ran slowly. JSON names are part
// of the --json format.
type SlowWindow struct {
	StartUnixMs float64 `json:"start_unix_ms"`
	Ms          float64 `json:"ms"`
	// Slowdown is the window's median chunk time over the run's median.
	Slowdown float64 `json:"slowdown"`
}

// CPUSlowdowns is what the probe saw during a phase.
type CPUSlowdowns struct {
	ChunkUs      float64 `json:"chunk_us"` // the run's median chunk time
	Samples      int     `json:"samples"`
	PhaseSeconds float64 `json:"phase_seconds"` // how long the probe ran
	// Realtime says the probe's thread ran at SCHED_FIFO priority (as root).
	// Without it, a machine saturated by the load can keep the probe from
	// running during a window, and that window is missed.
	Realtime    bool         `json:"realtime"`
	Seconds     float64      `json:"seconds"`  // the windows' total length
	Fraction    float64      `json:"fraction"` // Seconds over the phase
	MaxSlowdown float64      `json:"max_slowdown"`
	Windows     []SlowWindow `json:"windows"`
	// Reclaim is what the kernel reclaim watch saw (reclaim.go); nil on a
	// machine without a kdamond thread.
	Reclaim *KernelReclaim `json:"kernel_reclaim,omitempty"`
}

// speedProbe runs until stop.
type speedProbe struct {
	quit     chan struct{}
	done     chan struct{}
	samples  []speedSample
	realtime bool          // written by run before the first sample
	watch    *reclaimWatch // kdamond threads, or nil; opened by run before the first sample
	taken    atomic.Int64  // len(samples), for tests to wait on
	begin    time.Time
}

// probeSink keeps the probe's arithmetic from being optimised away.
var probeSink uint64

// spin runs n steps of a 64-bit LCG: pure register arithmetic.
func spin(n int) {
	x := probeSink | 1
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	probeSink = x
}

// calibrate returns the number of spin steps that take about d, from the
// fastest of several trials (the slowest trials are the ones disturbed). A
// calibration that lands in a slow window only makes the chunk shorter:
// windows are judged against the run's median, not against d.
func calibrate(d time.Duration) int {
	const steps = 20000
	best := time.Duration(1 << 62)
	for i := 0; i < 25; i++ {
		t := time.Now()
		spin(steps)
		best = min(best, time.Since(t))
	}
	return max(1, int(float64(steps)*float64(d)/float64(max(best, time.Nanosecond))))
}

// startSpeedProbe starts sampling for about expect; room for that many
// samples is made up front so the run is not disturbed by growing the
// slice.
func startSpeedProbe(expect time.Duration) *speedProbe {
	p := &speedProbe{quit: make(chan struct{}), done: make(chan struct{}),
		samples: make([]speedSample, 0, int(expect/probeEvery)+1024), begin: time.Now()}
	go p.run()
	return p
}

func (p *speedProbe) run() {
	defer close(p.done)
	// The thread stays locked to the end: if its priority was raised, the
	// goroutine's exit ends the thread rather than return it to the pool.
	runtime.LockOSThread()
	p.realtime = raiseProbePriority()
	p.watch = newReclaimWatch("/proc")
	n := calibrate(probeChunk)
	t := time.NewTicker(probeEvery)
	defer t.Stop()
	for {
		select {
		case <-p.quit:
			return
		case <-t.C:
		}
		start := time.Now()
		spin(n)
		s := speedSample{start: start.UnixMicro(), ns: int64(time.Since(start))}
		if p.watch != nil {
			s.reclaimNs = p.watch.cpuNs()
		}
		p.samples = append(p.samples, s)
		p.taken.Add(1)
	}
}

// stop ends the probe and summarises what it saw over the phase; nil for a
// nil probe.
func (p *speedProbe) stop() *CPUSlowdowns {
	if p == nil {
		return nil
	}
	close(p.quit)
	<-p.done
	phase := time.Since(p.begin)
	s := summarizeSlowdowns(p.samples, phase)
	s.Realtime = p.realtime
	if p.watch != nil {
		s.Reclaim = summarizeReclaim(p.watch, p.samples, phase.Seconds(), damonConfig("/sys/kernel/mm/damon/admin"))
		p.watch.close()
	}
	return s
}

// summarizeSlowdowns finds the slow windows among samples taken over a
// phase of length phase.
func summarizeSlowdowns(samples []speedSample, phase time.Duration) *CPUSlowdowns {
	med := medianNs(samples)
	s := &CPUSlowdowns{ChunkUs: float64(med) / 1e3, Samples: len(samples), PhaseSeconds: phase.Seconds(), Windows: []SlowWindow{}}
	for _, w := range slowWindows(samples, med) {
		s.Windows = append(s.Windows, w)
		s.Seconds += w.Ms / 1e3
		s.MaxSlowdown = max(s.MaxSlowdown, w.Slowdown)
	}
	if phase > 0 {
		s.Fraction = s.Seconds / phase.Seconds()
	}
	return s
}

func medianNs(samples []speedSample) int64 {
	if len(samples) == 0 {
		return 0
	}
	ns := make([]int64, len(samples))
	for i, s := range samples {
		ns[i] = s.ns
	}
	slices.Sort(ns)
	return ns[len(ns)/2]
}

// slowWindows returns the runs of at least slowMinSamples consecutive
// samples that each took more than slowFactor times med. A window spans
// from its first sample's start to its last sample's end.
func slowWindows(samples []speedSample, med int64) []SlowWindow {
	if med <= 0 {
		return nil
	}
	var out []SlowWindow
	slow := func(s speedSample) bool { return float64(s.ns) > slowFactor*float64(med) }
	for i := 0; i < len(samples); {
		if !slow(samples[i]) {
			i++
			continue
		}
		j := i
		for j < len(samples) && slow(samples[j]) {
			j++
		}
		if j-i >= slowMinSamples {
			run := samples[i:j]
			last := run[len(run)-1]
			end := float64(last.start) + float64(last.ns)/1e3
			out = append(out, SlowWindow{
				StartUnixMs: float64(run[0].start) / 1e3,
				Ms:          (end - float64(run[0].start)) / 1e3,
				Slowdown:    float64(medianNs(run)) / float64(med),
			})
		}
		i = j
	}
	return out
}

// overlapsAny reports whether [startUs, endUs] (unix µs) meets a window.
// windows are in start order.
func overlapsAny(windows []SlowWindow, startUs, endUs int64) bool {
	// The first window that ends after startUs is the only candidate that
	// can start before endUs among those not yet passed.
	i, _ := slices.BinarySearchFunc(windows, float64(startUs)/1e3, func(w SlowWindow, t float64) int {
		switch end := w.StartUnixMs + w.Ms; {
		case end < t:
			return -1
		case end > t:
			return 1
		}
		return 0
	})
	return i < len(windows) && windows[i].StartUnixMs <= float64(endUs)/1e3
}
