package bench

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The kernel reclaim watch. Some VMs run DAMON (the kernel's data access
// monitor) with a "pageout" scheme: a kernel thread, kdamond, samples which
// physical pages are in use and reclaims the cold ones, up to a time quota
// (seen here: 50 ms in every second, sampling every 500 ms). While it
// reclaims, the processes whose pages it unmaps wait: on the 2-vCPU VM this
// project is measured on, every acknowledgement stopped for 25–45 ms once
// every ~550 ms (500 ms of sleep plus its work), in step with kdamond's CPU
// time, and a paced run of 2000 records/s had p99 47 ms with it and 12–13 ms
// without it (README, "What they mean").
//
// The speed probe reads each kdamond thread's time on the CPU
// (/proc/PID/schedstat, nanoseconds) at every sample; reclaimWindows finds
// the stretches where it ran, and the latency "clear of slowdowns" leaves
// out the records in flight during them too. Without DAMON nothing is
// watched and nothing is reported.

// reclaimBusyNs is kdamond's CPU time within one probe interval that marks
// the interval busy (10% of 2 ms); reclaimMinCPUNs is the least CPU time a
// window must hold to be reported (shorter bursts are its sampling, not
// reclaim).
const (
	reclaimBusyNs   = 200_000
	reclaimMinCPUNs = 1_000_000
)

// ReclaimWindow is one stretch in which kdamond ran. JSON names are part of
// the --json format.
type ReclaimWindow struct {
	StartUnixMs float64 `json:"start_unix_ms"`
	Ms          float64 `json:"ms"`
	CPUMs       float64 `json:"cpu_ms"` // kdamond's time on the CPU within it
}

// KernelReclaim is what the watch saw during a phase.
type KernelReclaim struct {
	// Threads names the watched kdamond threads ("kdamond.0 (pid 78)").
	Threads []string `json:"threads"`
	// DAMON describes its configuration from sysfs when readable (e.g.
	// "paddr, sampled every 500ms, pageout up to 50ms per 1s").
	DAMON      string          `json:"damon,omitempty"`
	CPUSeconds float64         `json:"cpu_seconds"` // kdamond's CPU time over the phase
	Seconds    float64         `json:"seconds"`     // the windows' total length
	Fraction   float64         `json:"fraction"`    // Seconds over the phase
	Windows    []ReclaimWindow `json:"windows"`
}

// reclaimWatch reads the CPU time of the kdamond threads found when it was
// made. Owned by the probe's goroutine.
type reclaimWatch struct {
	threads []string
	files   []*os.File
	buf     []byte
}

// newReclaimWatch opens /proc/PID/schedstat of every kdamond thread under
// procDir; nil when there is none (or /proc is not there).
func newReclaimWatch(procDir string) *reclaimWatch {
	ents, err := os.ReadDir(procDir)
	if err != nil {
		return nil
	}
	w := &reclaimWatch{buf: make([]byte, 128)}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join(procDir, e.Name(), "comm"))
		if err != nil || !bytes.HasPrefix(comm, []byte("kdamond")) {
			continue
		}
		f, err := os.Open(filepath.Join(procDir, e.Name(), "schedstat"))
		if err != nil {
			continue
		}
		w.threads = append(w.threads, fmt.Sprintf("%s (pid %d)", bytes.TrimSpace(comm), pid))
		w.files = append(w.files, f)
	}
	if len(w.files) == 0 {
		return nil
	}
	return w
}

// cpuNs returns the watched threads' total time on the CPU so far; a
// thread that has gone counts no more.
func (w *reclaimWatch) cpuNs() int64 {
	var sum int64
	for _, f := range w.files {
		n, err := f.ReadAt(w.buf, 0)
		if n == 0 && err != nil {
			continue
		}
		if ns, ok := parseSchedstat(w.buf[:n]); ok {
			sum += ns
		}
	}
	return sum
}

func (w *reclaimWatch) close() {
	if w == nil {
		return
	}
	for _, f := range w.files {
		f.Close()
	}
}

// parseSchedstat reads the first field of /proc/PID/schedstat: time spent
// on the CPU, in nanoseconds.
func parseSchedstat(b []byte) (int64, bool) {
	f := bytes.Fields(b)
	if len(f) == 0 {
		return 0, false
	}
	ns, err := strconv.ParseInt(string(f[0]), 10, 64)
	return ns, err == nil && ns >= 0
}

// reclaimWindows returns the runs of consecutive probe intervals in which
// kdamond ran at least reclaimBusyNs, holding reclaimMinCPUNs or more in
// all. samples carry kdamond's cumulative CPU time (reclaimNs); an
// interval spans from one sample's start to the next one's.
func reclaimWindows(samples []speedSample) []ReclaimWindow {
	var out []ReclaimWindow
	for i := 1; i < len(samples); {
		if samples[i].reclaimNs-samples[i-1].reclaimNs < reclaimBusyNs {
			i++
			continue
		}
		j := i
		for j < len(samples) && samples[j].reclaimNs-samples[j-1].reclaimNs >= reclaimBusyNs {
			j++
		}
		first, last := samples[i-1], samples[j-1]
		if cpu := last.reclaimNs - first.reclaimNs; cpu >= reclaimMinCPUNs {
			// The kernel adds a thread's time to schedstat when it is
			// switched out or at a scheduler tick, so a read can show time
			// spent before the interval: the window is at least that long.
			out = append(out, ReclaimWindow{
				StartUnixMs: float64(first.start) / 1e3,
				Ms:          max(float64(last.start-first.start)/1e3, float64(cpu)/1e6),
				CPUMs:       float64(cpu) / 1e6,
			})
		}
		i = j
	}
	return out
}

// summarizeReclaim sums up the watch over a phase of phaseSeconds.
func summarizeReclaim(w *reclaimWatch, samples []speedSample, phaseSeconds float64, damon string) *KernelReclaim {
	r := &KernelReclaim{Threads: w.threads, DAMON: damon, Windows: []ReclaimWindow{}}
	if len(samples) > 1 {
		r.CPUSeconds = float64(samples[len(samples)-1].reclaimNs-samples[0].reclaimNs) / 1e9
	}
	for _, win := range reclaimWindows(samples) {
		r.Windows = append(r.Windows, win)
		r.Seconds += win.Ms / 1e3
	}
	if phaseSeconds > 0 {
		r.Fraction = r.Seconds / phaseSeconds
	}
	return r
}

// damonConfig describes the first running kdamond's configuration from
// DAMON's sysfs interface under dir (/sys/kernel/mm/damon/admin), or ""
// when it is not readable.
func damonConfig(dir string) string {
	read := func(p ...string) string {
		b, err := os.ReadFile(filepath.Join(append([]string{dir}, p...)...))
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	kds, _ := filepath.Glob(filepath.Join(dir, "kdamonds", "[0-9]*"))
	for _, kd := range kds {
		k := filepath.Base(kd)
		if read("kdamonds", k, "state") != "on" {
			continue
		}
		ctx := []string{"kdamonds", k, "contexts", "0"}
		parts := []string{}
		if ops := read(append(ctx, "operations")...); ops != "" {
			parts = append(parts, ops)
		}
		if us, err := strconv.ParseInt(read(append(ctx, "monitoring_attrs", "intervals", "sample_us")...), 10, 64); err == nil {
			parts = append(parts, "sampled every "+fmtMicros(us))
		}
		schemes, _ := filepath.Glob(filepath.Join(dir, filepath.Join(ctx...), "schemes", "[0-9]*"))
		for _, s := range schemes {
			rel := append(ctx, "schemes", filepath.Base(s))
			desc := read(append(rel, "action")...)
			if desc == "" {
				continue
			}
			ms, _ := strconv.ParseInt(read(append(rel, "quotas", "ms")...), 10, 64)
			per, _ := strconv.ParseInt(read(append(rel, "quotas", "reset_interval_ms")...), 10, 64)
			if ms > 0 && per > 0 {
				desc += fmt.Sprintf(" up to %s per %s", fmtMicros(ms*1000), fmtMicros(per*1000))
			}
			parts = append(parts, desc)
		}
		return strings.Join(parts, ", ")
	}
	return ""
}

// fmtMicros prints a duration given in µs the way time.Duration does.
func fmtMicros(us int64) string {
	return fmt.Sprint(time.Duration(us) * time.Microsecond)
}

// excluded returns the windows whose records the latency "clear of
// slowdowns" leaves out: the CPU's slow windows and kdamond's, as one list
// in start order with overlapping windows merged (what overlapsAny wants).
func (s *CPUSlowdowns) excluded() []SlowWindow {
	ws := slices.Clone(s.Windows)
	if s.Reclaim != nil {
		for _, r := range s.Reclaim.Windows {
			ws = append(ws, SlowWindow{StartUnixMs: r.StartUnixMs, Ms: r.Ms})
		}
	}
	slices.SortFunc(ws, func(a, b SlowWindow) int { return cmp.Compare(a.StartUnixMs, b.StartUnixMs) })
	out := ws[:0]
	for _, w := range ws {
		if n := len(out); n > 0 && w.StartUnixMs <= out[n-1].StartUnixMs+out[n-1].Ms {
			last := &out[n-1]
			last.Ms = max(last.Ms, w.StartUnixMs+w.Ms-last.StartUnixMs)
			last.Slowdown = max(last.Slowdown, w.Slowdown)
			continue
		}
		out = append(out, w)
	}
	return out
}
