package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is everything one `paymentlog bench` run measured. Its JSON (--json)
// keys are part of the command's contract: add keys, never rename them.
type Report struct {
	StartedAt          time.Time         `json:"started_at"`
	Seconds            float64           `json:"seconds"`
	Config             ReportConfig      `json:"config"`
	Transport          *TransportResult  `json:"transport,omitempty"`
	Disk               *DiskResult       `json:"disk,omitempty"`
	Throughput         *ThroughputResult `json:"throughput,omitempty"`
	Failover           *FailoverResult   `json:"failover,omitempty"`
	ControllerFailover *ControllerResult `json:"controller_failover,omitempty"`
	Rolling            *RollingResult    `json:"rolling,omitempty"`   // bench rolling
	CPUProbe           *CPUSlowdowns     `json:"cpu_probe,omitempty"` // bench cpu
	Targets            []TargetCheck     `json:"targets"`
	Crashes            []string          `json:"node_crashes,omitempty"`
	Skipped            []string          `json:"skipped,omitempty"`
	Errors             []string          `json:"errors,omitempty"`
}

// ReportConfig is the full configuration and the versions involved.
type ReportConfig struct {
	Mode               Mode                     `json:"mode"`
	Cluster            map[string]any           `json:"cluster"`
	Throughput         ThroughputConfig         `json:"throughput"`
	Transport          TransportConfig          `json:"transport"`
	Failover           FailoverConfig           `json:"failover"`
	ControllerFailover ControllerFailoverConfig `json:"controller_failover"`
	Rolling            RollingConfig            `json:"rolling"`
	Versions           map[string]string        `json:"versions"`
	Machine            map[string]any           `json:"machine"`
}

// TargetCheck compares one figure with the project's target.
type TargetCheck struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Target string  `json:"target"`
	Met    bool    `json:"met"`
	// Why is set on a missed target: the run's measurements that bear on
	// it (targetwhy.go).
	Why string `json:"why,omitempty"`
}

func reportConfig(cfg Config, cluster map[string]any) ReportConfig {
	v := map[string]string{"paymentlog": cfg.Version, "go": runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			switch d.Path {
			case "github.com/quic-go/quic-go", "go.etcd.io/raft/v3", "github.com/vmihailenco/msgpack/v5", "github.com/edsrzf/mmap-go":
				v[d.Path] = d.Version
			}
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				v["vcs.revision"] = s.Value
			}
		}
	}
	host, _ := os.Hostname()
	return ReportConfig{
		Mode: cfg.Mode, Cluster: cluster, Throughput: cfg.Throughput, Transport: cfg.Transport,
		Failover: cfg.Failover, ControllerFailover: cfg.Controller, Rolling: cfg.Rolling, Versions: v,
		Machine: map[string]any{"os": runtime.GOOS, "arch": runtime.GOARCH, "cpus": runtime.NumCPU(), "hostname": host, "load_avg_at_start": loadAvg()},
	}
}

// checkTargets evaluates the targets that this run measured.
func (r *Report) checkTargets(cfg Config) {
	// addWhy is add for a target whose miss the run's measurements can
	// explain: why is called only when it is missed.
	addWhy := func(name string, v float64, target string, met bool, why func() string) {
		tc := TargetCheck{Name: name, Value: v, Target: target, Met: met}
		if !met && why != nil {
			tc.Why = why()
		}
		r.Targets = append(r.Targets, tc)
	}
	add := func(name string, v float64, target string, met bool) { addWhy(name, v, target, met, nil) }
	cpus, _ := r.Config.Machine["cpus"].(int)
	if t := r.Throughput; t != nil {
		tc := cfg.Throughput
		canonical := tc.Acks == "all" && tc.ReplicationFactor == 3 && tc.MinISR == 2 && tc.Fsync == "always"
		fullWhy := func() string { return throughputWhy(t, cpus) }
		if canonical && tc.RecordSize == 1024 {
			addWhy("throughput MB/s (1 KiB, acks=all, RF 3, fsync always)", t.MBPerSec, ">= 100", t.MBPerSec >= 100, fullWhy)
			if t.TransportRatio > 0 {
				addWhy("share of the transport ceiling", t.TransportRatio, fmt.Sprintf(">= %.2f", TargetShare), t.TransportRatio >= TargetShare,
					func() string { return shareWhy(t, r.Transport, cpus) })
			}
		}
		if canonical && tc.RecordSize <= 100 {
			addWhy("throughput records/s (100 B)", t.RecordsPerSec, ">= 300000", t.RecordsPerSec >= 300000, fullWhy)
		}
		if h := t.HalfLoad; h != nil {
			addWhy("produce p99 ms at half load", h.ProduceLatency.P99, "<= 10", h.ProduceLatency.P99 <= 10,
				func() string { return halfLoadWhy(h, tc.Linger, cpus) })
		}
		// Partition changes between two polls may be shrinks the views
		// never showed (shrunk and re-expanded in between): they count.
		bad := float64(t.Changes.ISRShrinks + t.Changes.Fencings + t.Changes.Unseen)
		addWhy("ISR shrinks + fencings without faults (and partition changes between polls)", bad, "== 0", bad == 0,
			func() string { return changesWhy(t) })
	}
	// A trial without a figure (writes never resumed within the timeout)
	// is left out of the percentiles, so they cannot meet a target then.
	if f := r.Failover; f != nil {
		if u := f.UnavailableMs; len(f.Trials) > 0 {
			all := u.N > 0 && u.Missing == 0
			b := boundSuffix(f.KillInstant)
			add("failover unavailability p50 ms"+b, u.P50, "<= 300", all && u.P50 <= 300)
			add("failover unavailability p99 ms"+b, u.P99, "<= 1000", all && u.P99 <= 1000)
		}
		// Zero lost counts only if records were acknowledged and every one
		// of them was read back.
		verified := f.Acked > 0 && f.Unverified == 0 && f.Verified == f.Acked
		add("acknowledged records lost", float64(f.LostRecords), "== 0", verified && f.LostRecords == 0)
		add("records at more than one offset", float64(f.Duplicates), "== 0", verified && f.Duplicates == 0)
	}
	if ro := r.Rolling; ro != nil {
		verified := ro.Acked > 0 && ro.Unverified == 0 && ro.Verified == ro.Acked
		add("acknowledged records lost (rolling restart)", float64(ro.LostRecords), "== 0", verified && ro.LostRecords == 0)
	}
	if c := r.ControllerFailover; c != nil && len(c.Trials) > 0 {
		add("controller failover p99 ms"+boundSuffix(c.KillInstant), c.Ms.P99, "<= 1000", c.Ms.N > 0 && c.Ms.Missing == 0 && c.Ms.P99 <= 1000)
	}
}

// writeJSON writes the report to path.
func (r *Report) writeJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// WriteTable prints the human summary.
func (r *Report) WriteTable(out io.Writer) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	defer w.Flush()
	f2 := func(v float64) string { return fmt.Sprintf("%.2f", v) }
	lat := func(p Percentiles) string {
		return fmt.Sprintf("p50 %s  p95 %s  p99 %s  p99.9 %s  max %s ms", f2(p.P50), f2(p.P95), f2(p.P99), f2(p.P999), f2(p.Max))
	}
	sum := func(s Summary) string {
		if s.N == 0 {
			if s.Missing > 0 {
				return fmt.Sprintf("no successful trial (%d without a figure)", s.Missing)
			}
			return "no successful trial"
		}
		m := ""
		if s.Missing > 0 {
			m = fmt.Sprintf("; %d more trial(s) without a figure, not in these percentiles", s.Missing)
		}
		return fmt.Sprintf("p50 %.0f  p99 %.0f  max %.0f ms  (n=%d%s)", s.P50, s.P99, s.Max, s.N, m)
	}
	procs := ""
	if p, ok := r.Config.Cluster["node_gomaxprocs"].(int); ok && p > 0 {
		procs = fmt.Sprintf(", local nodes at GOMAXPROCS %d", p)
		if b, ok := r.Config.Cluster["bench_gomaxprocs"].(int); ok && b > 0 {
			procs = fmt.Sprintf(", local nodes and the bench's load at GOMAXPROCS %d", p)
			if b != p {
				procs = fmt.Sprintf(", local nodes at GOMAXPROCS %d, the bench's load at %d", p, b)
			}
		}
	}
	if ns, _ := r.Config.Cluster["netns"].(bool); ns {
		procs += ", each node in its own network namespace"
	}
	fmt.Fprintf(w, "paymentlog bench (%s, %.0fs, %s, %d CPUs%s, load average at start %s)\n", r.Config.Mode, r.Seconds, r.Config.Versions["paymentlog"], r.Config.Machine["cpus"], procs, r.Config.Machine["load_avg_at_start"])
	if t := r.Transport; t != nil {
		gro := ""
		if t.ReceiveOffload {
			gro = ", UDP receive offload"
		}
		fmt.Fprintf(w, "\nTRANSPORT\traw QUIC, %d stream(s), %s%s\n", t.Streams, t.Cipher, gro)
		fmt.Fprintf(w, "  throughput\t%.1f MB/s (median of %d rounds: %s)\n", t.MBPerSec, len(t.Rounds), floats(t.Rounds))
		if t.CPUMsPerMB > 0 {
			fmt.Fprintf(w, "  CPU per MB moved\t%.2f ms, both ends (median of %d rounds: %s)\n", t.CPUMsPerMB, len(t.CPURounds), floatsN(t.CPURounds, 2))
		}
		if a := t.AtTarget; a != nil {
			fmt.Fprintf(w, "  at the target share\t%s\n", a.summary())
		}
	}
	if d := r.Disk; d != nil {
		fmt.Fprintf(w, "\nDISK\traw writes of %d KiB, each made durable (fdatasync), in %s\n", d.ChunkB>>10, d.Dir)
		fmt.Fprintf(w, "  throughput\t%.1f MB/s (median of %d rounds: %s), dropping durable pages from the page cache as the nodes do\n", d.MBPerSec, len(d.Rounds), floats(d.Rounds))
		fmt.Fprintf(w, "  page cache left to the OS\t%.1f MB/s (median of %s)\n", d.LeftCachedMBPerSec, floats(d.LeftCachedRounds))
	}
	if t := r.Throughput; t != nil {
		tc := r.Config.Throughput
		fmt.Fprintf(w, "\nTHROUGHPUT\t%d B records (%s payload), acks=%s, RF %d, min ISR %d, fsync %s, %d partitions, %d producers, idempotence %v, batch %d B, linger %v, compression %s\n",
			t.RecordSize, t.Payload, tc.Acks, tc.ReplicationFactor, tc.MinISR, tc.Fsync, tc.Partitions, tc.Producers, tc.Idempotence, tc.BatchBytes, tc.Linger, t.Compression)
		if len(t.Rounds) > 1 {
			fmt.Fprintf(w, "  rounds\t%d, each on a fresh topic; the figures below are the medians of each figure (latency max: the largest), counts are summed, CPU, messages, QUIC loss and stored bytes are the median round's\n", len(t.Rounds))
			for _, rd := range t.Rounds {
				half := ""
				if rd.HalfLoad != nil {
					half = fmt.Sprintf(", half load %.0f records/s p50 %s p99 %s ms", rd.HalfLoadRate, f2(rd.HalfLoad.P50), f2(rd.HalfLoad.P99))
				}
				ratio := ""
				if rd.TransportRatio > 0 {
					ratio = fmt.Sprintf(" (%.2f of the transport ceiling)", rd.TransportRatio)
				}
				c := rd.Changes
				fmt.Fprintf(w, "  round %d\t%.1f MB/s%s%s, %d ISR shrinks, %d fencings\n", rd.Round, rd.MBPerSec, ratio, half, c.ISRShrinks, c.Fencings)
			}
		}
		fmt.Fprintf(w, "  produced\t%d records in %.1fs (%d failed)\n", t.Records, t.Seconds, t.Failed)
		fmt.Fprintf(w, "  throughput\t%.0f records/s, %.1f MB/s payload (%.1f MB/s replicated)\n", t.RecordsPerSec, t.MBPerSec, t.ReplicatedMBPerSec)
		storedLine(w, t)
		if t.TransportRatio > 0 {
			fmt.Fprintf(w, "  transport ceiling\t%.2f of raw QUIC ÷ RF\n", t.TransportRatio)
		}
		if t.DiskRatio > 0 {
			fmt.Fprintf(w, "  disk ceiling\t%.2f of raw disk write (replicated MB/s ÷ raw disk MB/s)\n", t.DiskRatio)
		}
		fmt.Fprintf(w, "  produce latency (full load)\t%s\n", lat(t.ProduceLatency))
		if c := t.Consume; c != nil {
			fmt.Fprintf(w, "  consume\t%.0f records/s, %.1f MB/s (%d records read back)\n", c.RecordsPerSec, c.MBPerSec, c.Records)
		}
		if h := t.HalfLoad; h != nil {
			fmt.Fprintf(w, "  half load\t%.0f records/s (target %.0f)\n", h.RecordsPerSec, h.TargetRate)
			fmt.Fprintf(w, "  produce latency (half load)\t%s\n", lat(h.ProduceLatency))
			if s := h.CPUSlowdowns; s != nil {
				fmt.Fprintf(w, "  CPU slowdowns (half load)\t%d windows, %.2fs in all (%.1f%% of the run), the CPU up to %.1f× slower (a %.0f µs piece of arithmetic timed every %v)\n",
					len(s.Windows), s.Seconds, 100*s.Fraction, s.MaxSlowdown, s.ChunkUs, probeEvery)
				reclaimLine(w, "half load", s.Reclaim)
			}
			if c := h.ClearLatency; c != nil && h.ClearOf > 0 {
				of := "records"
				if h.ClearOf < h.Records {
					of = fmt.Sprintf("the first %d records", h.ClearOf)
				}
				of2 := "slowdowns"
				if s := h.CPUSlowdowns; s != nil && s.Reclaim != nil {
					of2 = "slowdowns and reclaim"
				}
				fmt.Fprintf(w, "  produce latency (half load, clear of %s)\t%s (%.1f%% of %s)\n", of2, lat(*c), 100*float64(c.Count)/float64(h.ClearOf), of)
			}
			stagesLine(w, "half load", h.Stages)
			fmt.Fprintf(w, "  end-to-end latency (half load, partition %d)\t%s\n", h.E2EPartition, lat(h.EndToEnd))
			cpuLine(w, "half load", h.CPU)
			quicLossLine(w, "half load", h.QUICLoss)
			messagesLine(w, "half load", h.Messages)
		}
		cpuLine(w, "full load", t.CPU)
		quicLossLine(w, "full load", t.QUICLoss)
		messagesLine(w, "full load", t.Messages)
		c := t.Changes
		fmt.Fprintf(w, "  cluster changes\t%d ISR shrinks, %d expands, %d leader changes, %d fencings, %d partition changes between two polls (not seen)\n", c.ISRShrinks, c.ISRExpands, c.LeaderChanges, c.Fencings, c.Unseen)
		for _, why := range t.ChangeReasons {
			fmt.Fprintf(w, "  why (node logs)\t%s\n", why)
		}
		if t.ChangeReasonsMore > 0 {
			fmt.Fprintf(w, "  why (node logs)\t%d more reasons in the node logs\n", t.ChangeReasonsMore)
		}
		if t.FirstError != "" {
			fmt.Fprintf(w, "  first error\t%s\n", t.FirstError)
		}
	}
	if f := r.Failover; f != nil {
		fmt.Fprintf(w, "\nLEADER FAILOVER\t%d trials, acks=all at %d records/s over %d partitions, SIGKILL of partition 0's leader\n", len(f.Trials), f.Rate, f.Partitions)
		if f.KillInstant == KillInstantCmdStart {
			fmt.Fprintf(w, "  times run from\t%s (the command took %s)\n", upperBoundNote, sum(f.KillCmdMs))
		}
		fmt.Fprintf(w, "  time to fence\t%s\n", sum(f.FenceMs))
		if l := fencedByLine(f.Trials); l != "" {
			fmt.Fprintf(w, "  fenced by\t%s\n", l)
		}
		fmt.Fprintf(w, "  time to new leader\t%s\n", sum(f.NewLeaderMs))
		fmt.Fprintf(w, "  unavailability\t%s\n", sum(f.UnavailableMs))
		fmt.Fprintf(w, "  new leader → first ack\t%s\n", sum(f.AckAfterLeaderMs))
		fmt.Fprintf(w, "  consumer resumes\t%s\n", sum(f.ConsumerResumeMs))
		fmt.Fprintf(w, "  rejoin ISR after restart\t%s\n", sum(f.RejoinMs))
		fmt.Fprintf(w, "  records\t%d acknowledged, %d verified, %d lost, %d unverified, %d duplicates, %d failed deliveries\n", f.Acked, f.Verified, f.LostRecords, f.Unverified, f.Duplicates, f.Failed)
		for _, e := range f.LostExamples {
			fmt.Fprintf(w, "  lost\t%s\n", e)
		}
		for _, e := range f.DuplicateExamples {
			fmt.Fprintf(w, "  duplicate\t%s\n", e)
		}
		var both []string
		for _, t := range f.Trials {
			if t.VictimWasController {
				both = append(both, fmt.Sprintf("trial %d (unavailable %.0f ms)", t.Trial, t.UnavailableMs))
			}
		}
		if len(both) > 0 {
			fmt.Fprintf(w, "  victim was also the controller\t%s\n", strings.Join(both, ", "))
		}
		for _, t := range f.Trials {
			if t.Error != "" {
				fmt.Fprintf(w, "  trial %d\t%s\n", t.Trial, t.Error)
			}
			if t.LogsKept != "" {
				fmt.Fprintf(w, "  node logs of trial %d (slow or failed)\t%s\n", t.Trial, t.LogsKept)
			}
		}
	}
	if c := r.ControllerFailover; c != nil {
		fmt.Fprintf(w, "\nCONTROLLER FAILOVER\t%d trials, SIGKILL of the active controller\n", len(c.Trials))
		if c.KillInstant == KillInstantCmdStart {
			fmt.Fprintf(w, "  times run from\t%s (the command took %s)\n", upperBoundNote, sum(c.KillCmdMs))
		}
		fmt.Fprintf(w, "  new controller elected\t%s\n", sum(c.ElectedMs))
		fmt.Fprintf(w, "  until a topic creation commits\t%s\n", sum(c.Ms))
		for _, t := range c.Trials {
			if t.Error != "" {
				fmt.Fprintf(w, "  trial %d\t%s\n", t.Trial, t.Error)
			}
			if t.LogsKept != "" {
				fmt.Fprintf(w, "  node logs of trial %d (slow or failed)\t%s\n", t.Trial, t.LogsKept)
			}
		}
	}
	if ro := r.Rolling; ro != nil {
		writeRolling(w, ro)
	}
	if s := r.CPUProbe; s != nil {
		fmt.Fprintf(w, "\nCPU SPEED\ta %.0f µs piece of arithmetic timed every %v for %.1fs, no cluster running\n", s.ChunkUs, probeEvery, s.PhaseSeconds)
		fmt.Fprintf(w, "  slowdowns\t%d windows of %d+ samples over %.0f× the median, %.2fs in all (%.1f%% of the time), the CPU up to %.1f× slower\n",
			len(s.Windows), slowMinSamples, slowFactor, s.Seconds, 100*s.Fraction, s.MaxSlowdown)
		for i, win := range s.Windows {
			fmt.Fprintf(w, "  window %d\t%s, %.0f ms, %.1f× slower\n", i+1, time.UnixMicro(int64(win.StartUnixMs*1e3)).Format("15:04:05.000"), win.Ms, win.Slowdown)
		}
		reclaimLine(w, "", s.Reclaim)
		if r := s.Reclaim; r != nil {
			for i, win := range r.Windows {
				if i == maxReclaimWindowsListed {
					fmt.Fprintf(w, "  reclaim windows\t%d more in the JSON\n", len(r.Windows)-i)
					break
				}
				fmt.Fprintf(w, "  reclaim window %d\t%s, %.0f ms, kdamond on the CPU %.1f ms\n", i+1, time.UnixMicro(int64(win.StartUnixMs*1e3)).Format("15:04:05.000"), win.Ms, win.CPUMs)
			}
		}
	}
	if len(r.Targets) > 0 {
		fmt.Fprintf(w, "\nTARGETS\n")
		for _, t := range r.Targets {
			mark := "MET"
			if !t.Met {
				mark = "MISSED"
			}
			if t.Why != "" {
				mark += ": " + t.Why
			}
			fmt.Fprintf(w, "  %s\t%s (target %s)\t%s\n", t.Name, trimFloat(t.Value), t.Target, mark)
		}
	}
	for _, c := range r.Crashes {
		fmt.Fprintf(w, "\nNODE CRASH\t%s\n", c)
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(w, "\nSKIPPED\t%s\n", s)
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "\nERROR\t%s\n", e)
	}
}

func floats(xs []float64) string { return floatsN(xs, 0) }

// floatsN lists xs with digits decimals each.
func floatsN(xs []float64, digits int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.FormatFloat(x, 'f', digits, 64)
	}
	return strings.Join(s, ", ")
}

func trimFloat(v float64) string {
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%.2f", v)
}

// storedLine writes what the leaders stored per payload byte and the CPU
// per payload MB of the full-load run, where they were measured.
func storedLine(w io.Writer, t *ThroughputResult) {
	if t.StoredPerPayloadByte > 0 {
		fmt.Fprintf(w, "  stored (full load)\t%.3f bytes per payload byte on the leaders (%.1f MB for %.1f MB of payload, compression %s)\n",
			t.StoredPerPayloadByte, float64(t.StoredBytes)/1e6, float64(t.StoredBytes)/t.StoredPerPayloadByte/1e6, t.Compression)
	}
	if t.NodeCPUMsPerMB > 0 {
		raw := ""
		if t.TransportCPUMsPerMB > 0 {
			raw = fmt.Sprintf(" (the raw QUIC stream moved it once per replica for %.1f ms)", t.TransportCPUMsPerMB)
		}
		fmt.Fprintf(w, "  CPU per payload MB (full load)\tnodes %.1f ms + bench %.1f ms%s\n", t.NodeCPUMsPerMB, t.BenchCPUMsPerMB, raw)
	}
}

// cpuLine writes one phase's CPU usage, if it was measured.
func cpuLine(w io.Writer, phase string, u *CPUUsage) {
	if u == nil {
		return
	}
	fmt.Fprintf(w, "  CPU (%s)\tnodes %.1fs + bench %.1fs in %.1fs = %.2f CPUs; whole machine %.0f%% busy\n",
		phase, u.NodesSeconds, u.BenchSeconds, u.WallSeconds, u.Utilization, 100*u.MachineBusy)
}

// maxReclaimWindowsListed bounds the reclaim windows `bench cpu` lists (a
// kdamond sampling every 500 ms makes two a second).
const maxReclaimWindowsListed = 20

// reclaimLine prints what the kernel reclaim watch saw (nothing without a
// kdamond thread); phase labels the line, as cpuLine's does.
func reclaimLine(w io.Writer, phase string, r *KernelReclaim) {
	if r == nil {
		return
	}
	label := "kernel reclaim"
	if phase != "" {
		label += " (" + phase + ")"
	}
	cfg := ""
	if r.DAMON != "" {
		cfg = " [DAMON " + r.DAMON + "]"
	}
	fmt.Fprintf(w, "  %s\t%s on the CPU %.2fs; %d windows, %.2fs in all (%.1f%% of the run)%s\n",
		label, strings.Join(r.Threads, ", "), r.CPUSeconds, len(r.Windows), r.Seconds, 100*r.Fraction, cfg)
}

// fencedByLine counts the trials by why their victim was fenced
// (FailoverTrial.FencedBy), and the port_closed ones by what found the port
// (FailoverTrial.PortFoundBy); "" when no trial knows.
func fencedByLine(trials []FailoverTrial) string {
	counts, found := map[string]int{}, map[string]int{}
	known := 0
	for _, t := range trials {
		if t.FencedBy != "" {
			counts[t.FencedBy]++
			known++
		}
		if t.FencedBy == "port_closed" && t.PortFoundBy != "" {
			found[t.PortFoundBy]++
		}
	}
	if known == 0 {
		return ""
	}
	parts := countPhrases(counts, []string{"port_closed", "session", "deaf", "no_metadata"}, map[string]string{
		"port_closed": "its port found closed (the process was gone; --port-probe-after)",
		"session":     "its session running out (--session-timeout)",
		"deaf":        "its answers not reaching it",
		"no_metadata": "its raft hearing no metadata leader",
	})
	if by := countPhrases(found, []string{"traffic", "probe", "raft"}, map[string]string{
		"traffic": "the controller's own traffic", "probe": "its probe", "raft": "the new controller's raft",
	}); len(by) > 0 {
		parts[0] += " (by " + strings.Join(by, ", ") + ")" // port_closed comes first
	}
	if unknown := len(trials) - known; unknown > 0 {
		parts = append(parts, fmt.Sprintf("not known in %d", unknown))
	}
	return strings.Join(parts, ", ") + " of the trials"
}

// countPhrases is "NAME in N" for each key of counts with N > 0: the keys
// of order first, in that order and named by names, then any others by
// themselves, sorted.
func countPhrases(counts map[string]int, order []string, names map[string]string) []string {
	var parts []string
	for _, k := range order {
		if n := counts[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s in %d", names[k], n))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		if !slices.Contains(order, k) && counts[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s in %d", k, counts[k]))
		}
	}
	return parts
}
