package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// asBinaryEnv makes the cli test binary act as the paymentlog binary (see
// TestMain), so multi-process tests can start nodes without `go build`.
const asBinaryEnv = "PAYMENTLOG_CLI_TEST_AS_BINARY"

func TestMain(m *testing.M) {
	if os.Getenv(asBinaryEnv) == "1" {
		os.Exit(Run(os.Args))
	}
	os.Exit(m.Run())
}

func TestBenchUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "nonsense"},
		{"bench", "throughput", "--record-size", "10"},
		{"bench", "throughput", "failover"},
		{"bench", "--acks", "2"},
		{"bench", "throughput", "--compression", "gzip"},
		{"bench", "throughput", "--payload", "lorem"},
	} {
		_, stderr, code := runClientCLI(t, nil, args...)
		if code != 2 || !strings.HasPrefix(stderr, "paymentlog: ") {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
	}
}

// A count flag that would make a benchmark run nothing (no kill at all for
// failover --trials 0) is a usage error naming the flag, before any cluster
// is started; flags after the benchmark name count too.
func TestBenchRefusesEmptyCounts(t *testing.T) {
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"bench", "failover", "--trials", "0"}, "--trials"},
		{[]string{"bench", "--trials", "0"}, "--trials"},
		{[]string{"bench", "controller-failover", "--controller-trials", "0"}, "--controller-trials"},
		{[]string{"bench", "controller-failover", "--trials", "0"}, "--controller-trials"},
		{[]string{"bench", "throughput", "--producers", "0"}, "--producers"},
		{[]string{"bench", "throughput", "--partitions", "0"}, "--partitions"},
		{[]string{"bench", "throughput", "--records", "-5"}, "--records"},
		{[]string{"bench", "failover", "--failover-partitions", "0"}, "--failover-partitions"},
		{[]string{"bench", "transport", "--transport-rounds", "0"}, "--transport-rounds"},
		{[]string{"bench", "throughput", "--rounds", "0"}, "--rounds"},
		{[]string{"bench", "rolling", "--roll-rounds", "0"}, "--roll-rounds"},
		// What bench rolling cannot do: only its own local cluster, whose
		// nodes serve the health checks, with a node to spare.
		{[]string{"bench", "rolling", "--bootstrap", "127.0.0.1:1"}, "--bootstrap"},
		{[]string{"bench", "rolling", "--metrics=false"}, "--metrics"},
		{[]string{"bench", "rolling", "--nodes", "2"}, "--nodes"},
	} {
		out, stderr, code := runClientCLI(t, nil, c.args...)
		if code != 2 || out != "" || !strings.HasPrefix(stderr, "paymentlog: bench: "+c.flag+": ") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 naming %s", c.args, code, out, stderr, c.flag)
		}
	}
}

// TestBenchTiny runs every benchmark, very briefly, on a local 3-node cluster
// whose nodes are this test binary acting as paymentlog.
func TestBenchTiny(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	t.Setenv(asBinaryEnv, "1")
	dir := t.TempDir()
	jsonPath, plotPath := filepath.Join(dir, "bench.json"), filepath.Join(dir, "failover.svg")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stdout, stderr strings.Builder
	procs := runtime.GOMAXPROCS(0)
	code := RunContext(ctx, []string{"paymentlog", "bench",
		"--base-dir", dir,
		"--duration", "1s", "--half-load-duration", "500ms", "--partitions", "2", "--producers", "1",
		"--transport-duration", "200ms", "--transport-rounds", "1", "--rounds", "2",
		"--trials", "1", "--failover-rate", "300", "--failover-timeout", "20s",
		"--json", jsonPath, "--plot", plotPath,
		"--keep-slow-trials", "1ns", // every trial is slow: its node logs are kept
		"--compression", "zstd", "--payload", "payments",
	}, &stdout, &stderr)
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	if code != 0 {
		t.Fatalf("exit status %d", code)
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Throughput struct {
			RecordsPerSec  float64            `json:"records_per_sec"`
			MBPerSec       float64            `json:"mb_per_sec"`
			Compression    string             `json:"compression"`
			Payload        string             `json:"payload"`
			Stored         float64            `json:"stored_bytes_per_payload_byte"`
			ProduceLatency map[string]float64 `json:"produce_latency_ms"`
			HalfLoad       struct {
				Stages map[string]struct {
					Count uint64  `json:"count"`
					P99   float64 `json:"p99"`
				} `json:"latency_stages"`
			} `json:"half_load"`
			Rounds []struct {
				MBPerSec float64 `json:"mb_per_sec"`
				HalfLoad *struct {
					P99 float64 `json:"p99"`
				} `json:"half_load_produce_latency_ms"`
			} `json:"rounds"`
		} `json:"throughput"`
		Transport struct {
			MBPerSec float64 `json:"mb_per_sec"`
		} `json:"transport"`
		Disk struct {
			MBPerSec float64 `json:"mb_per_sec"`
			Dir      string  `json:"dir"`
		} `json:"disk"`
		Failover struct {
			Trials        []map[string]any   `json:"trials"`
			UnavailableMs map[string]float64 `json:"unavailable_ms"`
			ResumeMs      map[string]float64 `json:"consumer_resume_ms"`
			LostRecords   *int64             `json:"lost_records"`
			Verified      int64              `json:"verified"`
		} `json:"failover"`
		ControllerFailover struct {
			Ms     map[string]float64 `json:"ms"`
			Trials []struct {
				Victim   int32  `json:"victim"`
				LogsKept string `json:"logs_kept"`
			} `json:"trials"`
		} `json:"controller_failover"`
		Config map[string]any `json:"config"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	switch {
	case rep.Throughput.RecordsPerSec <= 0 || rep.Throughput.MBPerSec <= 0:
		t.Errorf("throughput %+v", rep.Throughput)
	case len(rep.Throughput.Rounds) != 2 || rep.Throughput.Rounds[1].HalfLoad == nil ||
		rep.Throughput.MBPerSec != max(rep.Throughput.Rounds[0].MBPerSec, rep.Throughput.Rounds[1].MBPerSec):
		t.Errorf("rounds %+v: want 2, reported MB/s %v the upper median", rep.Throughput.Rounds, rep.Throughput.MBPerSec)
	case !strings.Contains(stdout.String(), "  round 2 "):
		t.Errorf("the table lists no round 2")
	case rep.Throughput.Compression != "zstd" || rep.Throughput.Payload != "payments" ||
		rep.Throughput.Stored <= 0.05 || rep.Throughput.Stored >= 0.5 || !strings.Contains(stdout.String(), "bytes per payload byte on the leaders"):
		t.Errorf("compression %q, payload %q, %v stored bytes per payload byte: want zstd payments stored in less than half",
			rep.Throughput.Compression, rep.Throughput.Payload, rep.Throughput.Stored)
	case rep.Throughput.ProduceLatency["p999"] <= 0:
		t.Errorf("produce latency %v", rep.Throughput.ProduceLatency)
	case len(rep.Throughput.HalfLoad.Stages) != 4 || rep.Throughput.HalfLoad.Stages["leader_ms"].Count == 0 ||
		rep.Throughput.HalfLoad.Stages["batch_queue_ms"].P99 <= 0 || !strings.Contains(stdout.String(), "produce latency by stage (half load)"):
		t.Errorf("half-load latency stages %+v: want batch queue, request, leader and flush", rep.Throughput.HalfLoad.Stages)
	case rep.Transport.MBPerSec <= 0:
		t.Errorf("transport %+v", rep.Transport)
	case rep.Disk.MBPerSec <= 0 || rep.Disk.Dir != dir:
		t.Errorf("disk %+v (want it measured in %s)", rep.Disk, dir)
	case len(rep.Failover.Trials) != 1 || rep.Failover.UnavailableMs["max"] <= 0 || rep.Failover.ResumeMs["max"] <= 0:
		t.Errorf("failover %+v", rep.Failover)
	case rep.Failover.LostRecords == nil || *rep.Failover.LostRecords != 0 || rep.Failover.Verified == 0:
		t.Errorf("failover readback: lost %v, verified %d", rep.Failover.LostRecords, rep.Failover.Verified)
	case rep.ControllerFailover.Ms["max"] <= 0:
		t.Errorf("controller failover %+v", rep.ControllerFailover)
	case rep.Config["versions"] == nil:
		t.Errorf("config %v", rep.Config)
	}
	// The local nodes ran at their share of the CPUs (--node-gomaxprocs -1).
	if cl, _ := rep.Config["cluster"].(map[string]any); cl["node_gomaxprocs"] != float64(max(1, runtime.NumCPU()/3)) {
		t.Errorf("config.cluster.node_gomaxprocs = %v, want %d", cl["node_gomaxprocs"], max(1, runtime.NumCPU()/3))
	}
	// So did the bench's own load, and the bench put its GOMAXPROCS back.
	if cl, _ := rep.Config["cluster"].(map[string]any); cl["bench_gomaxprocs"] != float64(max(1, runtime.NumCPU()/3)) {
		t.Errorf("config.cluster.bench_gomaxprocs = %v, want %d", cl["bench_gomaxprocs"], max(1, runtime.NumCPU()/3))
	}
	if got := runtime.GOMAXPROCS(0); got != procs {
		t.Errorf("GOMAXPROCS %d after the bench, %d before", got, procs)
	}
	// Every trial took longer than --keep-slow-trials: each one's node logs
	// are kept, from just before its kill (the victim's restart is in them,
	// its first start is not).
	kept := map[string]int32{}
	if len(rep.Failover.Trials) == 1 {
		lk, _ := rep.Failover.Trials[0]["logs_kept"].(string)
		v, _ := rep.Failover.Trials[0]["victim"].(float64)
		kept[lk] = int32(v)
	}
	for _, tr := range rep.ControllerFailover.Trials {
		kept[tr.LogsKept] = tr.Victim
	}
	if len(kept) != 2 {
		t.Errorf("kept node logs: %v, want a directory for each of 2 trials", kept)
	}
	for d, victim := range kept {
		if !strings.HasPrefix(d, dir) || !strings.Contains(stdout.String(), d) {
			t.Errorf("kept logs %q: not under %s, or not in the report", d, dir)
			continue
		}
		b, err := os.ReadFile(filepath.Join(d, fmt.Sprintf("node%d.log", victim)))
		if log := string(b); err != nil || !strings.Contains(log, "start #2") || strings.Contains(log, "start #1") {
			t.Errorf("victim's kept log in %s (%v):\n%s", d, err, log)
		}
		// The bench's own log of the trial, at debug although the run
		// logs at error.
		b, err = os.ReadFile(filepath.Join(d, "bench.log"))
		if log := string(b); err != nil || !strings.Contains(log, "level=INFO msg=\"node killed\"") || !strings.Contains(log, fmt.Sprintf("node=%d", victim)) {
			t.Errorf("bench log kept in %s (%v):\n%s", d, err, log)
		}
	}
	if svg, err := os.ReadFile(plotPath); err != nil || !strings.Contains(string(svg), "<svg") {
		t.Errorf("plot: %v", err)
	}
	// The local cluster's directory is gone.
	if m, _ := filepath.Glob(filepath.Join(dir, "paymentlog-cluster-*")); len(m) != 0 {
		t.Errorf("cluster directory left behind: %v", m)
	}
}
