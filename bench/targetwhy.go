package bench

import (
	"fmt"
	"strings"
	"time"
)

// A missed target's Why puts the run's own measurements that bear on it
// beside the verdict, so that a reader of the TARGETS block sees what the
// figure was up against without reading the whole report: how busy the
// machine was, the CPU each payload MB cost, where the half-load latency
// went. It states measurements only; README's Benchmarks section says what
// they mean. Empty when the run did not measure them (--bootstrap, or
// --metrics=false for the stages).

// cpuWhy is a phase's CPU use: the cluster and the bench against the
// machine's CPUs, and the whole machine's busy share.
func cpuWhy(phase string, u *CPUUsage, cpus int) string {
	if u == nil || u.WallSeconds <= 0 {
		return ""
	}
	of := ""
	if cpus > 0 {
		of = fmt.Sprintf(" of %d", cpus)
	}
	return fmt.Sprintf("%s: the nodes and the bench used %.2f%s CPUs, the machine %.0f%% busy", phase, u.Utilization, of, 100*u.MachineBusy)
}

// throughputWhy is the full-load run's CPU use and its CPU per payload MB.
func throughputWhy(t *ThroughputResult, cpus int) string {
	parts := []string{cpuWhy("full load", t.CPU, cpus)}
	if t.NodeCPUMsPerMB > 0 {
		s := fmt.Sprintf("nodes %.1f + bench %.1f ms of CPU per payload MB", t.NodeCPUMsPerMB, t.BenchCPUMsPerMB)
		if t.TransportCPUMsPerMB > 0 {
			s += fmt.Sprintf(", the raw QUIC stream %.1f ms for the same transfers", t.TransportCPUMsPerMB)
		}
		parts = append(parts, s)
	}
	return joinWhy(parts)
}

// shareWhy is throughputWhy and, when measured, what the transport alone
// took at the target share (transport_target.go), what that leaves per
// payload MB, and what this run spent per payload MB beyond what the
// transport alone would take to move it.
func shareWhy(t *ThroughputResult, tr *TransportResult, cpus int) string {
	parts := []string{throughputWhy(t, cpus)}
	if tr == nil || tr.AtTarget == nil {
		return joinWhy(parts)
	}
	a := tr.AtTarget
	s := "at the target " + a.summary()
	if spent := t.NodeCPUMsPerMB + t.BenchCPUMsPerMB; spent > 0 && a.CPUMsPerMB > 0 {
		moving := float64(a.Connections) * a.CPUMsPerMB
		s += fmt.Sprintf("; this run spent %.1f ms per payload MB on it (nodes + bench beyond %d × %.2f ms)", spent-moving, a.Connections, a.CPUMsPerMB)
	}
	return joinWhy(append(parts, s))
}

// halfLoadWhy is the paced run's CPU use and the p99 of the stages its
// latency splits into (the batch queue includes the linger).
func halfLoadWhy(h *HalfLoad, linger time.Duration, cpus int) string {
	parts := []string{cpuWhy("half load", h.CPU, cpus)}
	if s := h.Stages; s != nil {
		var st []string
		if q := s.BatchQueue; q != nil {
			l := ""
			if linger > 0 {
				l = fmt.Sprintf(" (linger %s)", linger)
			}
			st = append(st, fmt.Sprintf("batch queue %.1f%s", q.P99, l))
		}
		if q := s.Leader; q != nil {
			st = append(st, fmt.Sprintf("on the leader %.1f", q.P99))
		}
		if q := s.Flush; q != nil {
			st = append(st, fmt.Sprintf("log flush %.1f", q.P99))
		}
		if len(st) > 0 {
			parts = append(parts, "p99 by stage: "+strings.Join(st, ", ")+" ms")
		}
	}
	return joinWhy(parts)
}

func joinWhy(parts []string) string {
	var kept []string
	for _, p := range parts {
		if p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, "; ")
}

// changesWhy is the first of the reasons the nodes logged for the cluster
// changes, and how many more there were.
func changesWhy(t *ThroughputResult) string {
	if len(t.ChangeReasons) == 0 {
		return ""
	}
	s := t.ChangeReasons[0]
	if more := len(t.ChangeReasons) - 1 + t.ChangeReasonsMore; more > 0 {
		s += fmt.Sprintf(" (%d more under cluster changes)", more)
	}
	return s
}
