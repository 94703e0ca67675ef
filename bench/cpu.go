package bench

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// CPUUsage is the CPU time the cluster's nodes and the bench itself used
// during a phase. On a shared machine it tells whether a figure was limited
// by our own CPU use (utilization near the CPU count) or by waiting.
type CPUUsage struct {
	WallSeconds  float64 `json:"wall_seconds"`
	NodesSeconds float64 `json:"nodes_cpu_seconds"` // user+system, all local nodes
	BenchSeconds float64 `json:"bench_cpu_seconds"` // user+system, this process (producers, consumers, watcher)
	// Utilization is (nodes + bench) CPU seconds per wall second; the
	// machine has Machine.cpus of them.
	Utilization float64 `json:"utilization"`
	// MachineBusy is the whole machine's non-idle share over the phase
	// (from /proc/stat), other processes included; 1 = every CPU busy.
	MachineBusy float64 `json:"machine_busy"`
	// NodesSwitches and BenchSwitches count context switches (voluntary and
	// not) over the phase: of every thread of the local nodes (from
	// /proc/PID/task/*/status; a thread that ends meanwhile is not counted),
	// and of this process (getrusage). Every wakeup of a sleeping thread is
	// two; on a VM each is dear (README, "Local nodes share the CPUs").
	NodesSwitches uint64 `json:"nodes_context_switches"`
	BenchSwitches uint64 `json:"bench_context_switches"`
}

// cpuMeter samples CPU counters at the start of a phase.
type cpuMeter struct {
	start                    time.Time
	pids                     []int
	nodes                    float64
	self                     float64
	busy, idle               uint64
	nodeSwitches, selfSwitch uint64
}

// userHZ is Linux's clock-tick rate for /proc CPU times (fixed at 100 on
// every architecture Go supports).
const userHZ = 100

func startCPU(pids []int) *cpuMeter {
	m := &cpuMeter{start: time.Now(), pids: pids}
	m.nodes = procCPU(pids)
	m.self = selfCPU()
	m.busy, m.idle = machineCPU()
	m.nodeSwitches, m.selfSwitch = procSwitches("/proc", pids), selfSwitches()
	return m
}

// stop returns the usage since start; nil for a nil meter (no local cluster).
func (m *cpuMeter) stop() *CPUUsage {
	if m == nil {
		return nil
	}
	wall := time.Since(m.start).Seconds()
	u := CPUUsage{WallSeconds: wall, NodesSeconds: procCPU(m.pids) - m.nodes, BenchSeconds: selfCPU() - m.self}
	if wall > 0 {
		u.Utilization = (u.NodesSeconds + u.BenchSeconds) / wall
	}
	busy, idle := machineCPU()
	if d := (busy - m.busy) + (idle - m.idle); d > 0 {
		u.MachineBusy = float64(busy-m.busy) / float64(d)
	}
	if n := procSwitches("/proc", m.pids); n > m.nodeSwitches {
		u.NodesSwitches = n - m.nodeSwitches
	}
	if n := selfSwitches(); n > m.selfSwitch {
		u.BenchSwitches = n - m.selfSwitch
	}
	return &u
}

// procSwitches sums the context switches of every thread of pids under
// procDir (voluntary_ctxt_switches + nonvoluntary_ctxt_switches of
// /proc/PID/task/*/status; 0 for what it cannot read).
func procSwitches(procDir string, pids []int) uint64 {
	var total uint64
	for _, pid := range pids {
		tasks, _ := os.ReadDir(fmt.Sprintf("%s/%d/task", procDir, pid))
		for _, t := range tasks {
			b, err := os.ReadFile(fmt.Sprintf("%s/%d/task/%s/status", procDir, pid, t.Name()))
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(b), "\n") {
				name, v, ok := strings.Cut(line, ":")
				if ok && (name == "voluntary_ctxt_switches" || name == "nonvoluntary_ctxt_switches") {
					n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
					total += n
				}
			}
		}
	}
	return total
}

// selfSwitches is this process's context switches, all threads included.
func selfSwitches() uint64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return uint64(ru.Nvcsw + ru.Nivcsw)
}

// procCPU sums utime+stime of pids in seconds (0 for any it cannot read).
func procCPU(pids []int) float64 {
	var total float64
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// Fields after the parenthesised command: state is field 3; utime 14, stime 15.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) < 13 {
			continue
		}
		ut, _ := strconv.ParseFloat(f[11], 64)
		st, _ := strconv.ParseFloat(f[12], 64)
		total += (ut + st) / userHZ
	}
	return total
}

func selfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// machineCPU returns the busy and idle jiffies of all CPUs from /proc/stat.
func machineCPU() (busy, idle uint64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0
	}
	for i, s := range f[1:] {
		v, _ := strconv.ParseUint(s, 10, 64)
		if i == 3 || i == 4 { // idle, iowait
			idle += v
		} else if i < 8 { // user nice system irq softirq steal
			busy += v
		}
	}
	return busy, idle
}

// loadAvg is /proc/loadavg's first three fields.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
