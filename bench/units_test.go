package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"paymentlog/quic"
	"paymentlog/wire"
)

func TestPayloadRoundTrip(t *testing.T) {
	p := newPayload(64)
	now := time.Unix(1700000000, 123456789)
	v := p.fill(now, 7, 42)
	if len(v) != 64 {
		t.Fatalf("len %d", len(v))
	}
	ts, id, err := parsePayload(v)
	if err != nil || !ts.Equal(now) || id != (recordID{producer: 7, seq: 42}) {
		t.Fatalf("got %v %+v %v", ts, id, err)
	}
	if _, _, err := parsePayload(v[:19]); !errors.Is(err, errShortPayload) {
		t.Fatalf("short payload: %v", err)
	}
}

func TestSummarize(t *testing.T) {
	s := summarize([]float64{5, 1, 3, 2, 4})
	if s != (Summary{N: 5, P50: 3, P99: 5, Max: 5}) {
		t.Fatalf("%+v", s)
	}
	if s := summarize(nil); s.N != 0 {
		t.Fatalf("%+v", s)
	}
	l := newLatency()
	for i := 1; i <= 1000; i++ {
		l.record(time.Duration(i) * time.Millisecond)
	}
	p := l.percentiles()
	if p.Count != 1000 || p.P50 < 499 || p.P50 > 501 || p.P999 < 998 || p.Max < 999.5 {
		t.Fatalf("%+v", p)
	}
}

func TestValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	bad := []func(*Config){
		func(c *Config) { c.Throughput.RecordSize = 19 },
		func(c *Config) { c.Throughput.ReplicationFactor = 4 },
		func(c *Config) { c.Throughput.MinISR = 4 },
		func(c *Config) { c.Throughput.Acks = "2" },
		func(c *Config) { c.Mode = ModeFailover; c.Bootstrap = []string{"127.0.0.1:1"} },
	}
	for i, f := range bad {
		c := DefaultConfig()
		f(&c)
		var ce *ConfigError
		if err := c.Validate(); !errors.As(err, &ce) {
			t.Errorf("case %d: %v", i, err)
		}
	}
	// A count that would make a phase run nothing is refused, naming the
	// flag; a count a mode does not use may be 0.
	for _, c := range []struct {
		mode  Mode
		set   func(*Config)
		field string // "" valid
	}{
		{ModeFailover, func(c *Config) { c.Failover.Trials = 0 }, "trials"},
		{ModeAll, func(c *Config) { c.Failover.Trials = 0 }, "trials"},
		{ModeControllerFailover, func(c *Config) { c.Controller.Trials = 0 }, "controller-trials"},
		{ModeAll, func(c *Config) { c.Controller.Trials = 0 }, "controller-trials"},
		{ModeThroughput, func(c *Config) { c.Failover.Trials, c.Controller.Trials = 0, 0 }, ""},
		{ModeControllerFailover, func(c *Config) { c.Failover.Trials = 0 }, ""},
		{ModeFailover, func(c *Config) { c.Controller.Trials = 0 }, ""},
		{ModeThroughput, func(c *Config) { c.Throughput.Producers = 0 }, "producers"},
		{ModeThroughput, func(c *Config) { c.Throughput.Partitions = 0 }, "partitions"},
		{ModeThroughput, func(c *Config) { c.Throughput.Records = -1 }, "records"},
		{ModeFailover, func(c *Config) { c.Failover.Partitions = 0 }, "failover-partitions"},
		{ModeTransport, func(c *Config) { c.Transport.Rounds = 0 }, "transport-rounds"},
		{ModeTransport, func(c *Config) { c.Transport.Streams = 0 }, "transport-streams"},
		{ModeTransport, func(c *Config) { c.Transport.Duration = 0 }, "transport-duration"},
	} {
		cfg := DefaultConfig()
		cfg.Mode = c.mode
		c.set(&cfg)
		err := cfg.Validate()
		var ce *ConfigError
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%s, field %q: %v; want valid", c.mode, c.field, err)
		case c.field != "" && (!errors.As(err, &ce) || ce.Field != c.field):
			t.Errorf("%s: %v; want a ConfigError naming %s", c.mode, err, c.field)
		}
	}
	if _, err := ParseMode("bogus"); err == nil {
		t.Error("ParseMode accepted bogus")
	}
	if m, _ := ParseMode(""); m != ModeAll || !m.runs(ModeFailover) || ModeTransport.runs(ModeFailover) {
		t.Error("modes")
	}
	if m, _ := ParseMode("cpu"); m != ModeCPU || !m.runs(ModeCPU) || m.runs(ModeThroughput) || ModeAll.runs(ModeCPU) {
		t.Error("cpu runs alone and is not part of all")
	}
	if got := expandCmd("scripts/cluster.sh kill {id}", 3); got != "scripts/cluster.sh kill 3" {
		t.Error(got)
	}
}

func md(offset int64, ctrl int32, states map[int32]string, isr []int32, leader, epoch int32) *wire.MetadataResponse {
	r := &wire.MetadataResponse{MetadataOffset: offset, ControllerID: ctrl}
	for id := int32(1); id <= 3; id++ {
		r.Brokers = append(r.Brokers, wire.BrokerInfo{ID: id, Addr: "n", State: states[id]})
	}
	r.Topics = []wire.TopicMetadata{{Name: "t", Partitions: []wire.PartitionMetadata{{Partition: 0, Leader: leader, LeaderEpoch: epoch, Replicas: []int32{1, 2, 3}, ISR: isr}}}}
	return r
}

var alive3 = map[int32]string{1: "alive", 2: "alive", 3: "alive"}

func TestDiffViews(t *testing.T) {
	a := md(1, 1, alive3, []int32{1, 2, 3}, 1, 0)
	b := md(2, 2, map[int32]string{1: "fenced", 2: "alive", 3: "alive"}, []int32{2, 3}, 2, 1)
	c := diffViews(a, b)
	if c != (Changes{ISRShrinks: 1, LeaderChanges: 1, Fencings: 1, Controllers: 1}) {
		t.Fatalf("%+v", c)
	}
	c = diffViews(b, md(3, 2, alive3, []int32{2, 3, 1}, 2, 1))
	if c != (Changes{ISRExpands: 1}) {
		t.Fatalf("%+v", c)
	}
	if !inSync(a, "t") || inSync(b, "t") || inSync(a, "other") || !allAlive(a) || allAlive(b) {
		t.Fatal("inSync/allAlive")
	}
}

// scripted answers Metadata calls from a list, one per call, then repeats the last.
type scripted struct {
	mu   sync.Mutex
	mds  []*wire.MetadataResponse
	next int
}

func (s *scripted) Call(ctx context.Context, addr string, _ quic.FrameType, _, resp any) error {
	s.mu.Lock()
	m := s.mds[min(s.next, len(s.mds)-1)]
	s.next++
	s.mu.Unlock()
	*resp.(*wire.MetadataResponse) = *m
	return nil
}

func TestWatcherHistory(t *testing.T) {
	tr := &scripted{mds: []*wire.MetadataResponse{
		md(1, 1, alive3, []int32{1, 2, 3}, 1, 0),
		md(1, 1, alive3, []int32{1, 2, 3}, 1, 0), // same offset: not kept
		md(2, 1, map[int32]string{1: "fenced", 2: "alive", 3: "alive"}, []int32{2, 3}, 2, 1),
		md(3, 1, alive3, []int32{2, 3, 1}, 2, 1),
	}}
	start := time.Now()
	w := newWatcher(context.Background(), tr, []string{"n"}, []string{"t"}, time.Millisecond)
	defer w.close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fenced, err := w.waitFor(ctx, start, func(m *wire.MetadataResponse) bool {
		b, ok := brokerOf(m, 1)
		return ok && b.State == "fenced"
	})
	if err != nil || fenced.md.MetadataOffset != 2 {
		t.Fatalf("fenced view %+v, %v", fenced, err)
	}
	if _, err := w.waitState(ctx, func(m *wire.MetadataResponse) bool { return inSync(m, "t") && m.MetadataOffset == 3 }); err != nil {
		t.Fatal(err)
	}
	c := w.changes(start, time.Now())
	if c != (Changes{ISRShrinks: 1, ISRExpands: 1, LeaderChanges: 1, Fencings: 1}) {
		t.Fatalf("%+v", c)
	}
	w.mu.Lock()
	n := len(w.mu.views)
	w.mu.Unlock()
	if n != 3 {
		t.Fatalf("%d views kept, want 3", n)
	}
}

// TestReportNamesControllerVictims: the failover table says which trials
// killed the controller too (their fencing waited for an election).
func TestReportNamesControllerVictims(t *testing.T) {
	rep := &Report{Failover: &FailoverResult{Trials: []FailoverTrial{
		{Trial: 1, UnavailableMs: 658, VictimWasController: true},
		{Trial: 2, UnavailableMs: 234},
	}}}
	var out strings.Builder
	rep.WriteTable(&out)
	if !strings.Contains(out.String(), "victim was also the controller  trial 1 (unavailable 658 ms)") {
		t.Fatalf("table:\n%s", out.String())
	}
	rep.Failover.Trials[0].VictimWasController = false
	out.Reset()
	rep.WriteTable(&out)
	if strings.Contains(out.String(), "victim was also the controller") {
		t.Fatalf("table names a controller victim that was not:\n%s", out.String())
	}
}

// --node-gomaxprocs: -1 gives each local node its share of the CPUs (at
// least 1), 0 leaves Go's default, N is taken as it is.
func TestNodeGOMAXPROCS(t *testing.T) {
	for _, c := range []struct{ setting, cpus, nodes, want int }{
		{-1, 2, 3, 1},
		{-1, 8, 3, 2},
		{-1, 16, 3, 5},
		{-1, 4, 0, 4},
		{0, 2, 3, 0},
		{3, 2, 3, 3},
	} {
		if got := nodeGOMAXPROCS(c.setting, c.cpus, c.nodes); got != c.want {
			t.Errorf("nodeGOMAXPROCS(%d, %d CPUs, %d nodes) = %d, want %d", c.setting, c.cpus, c.nodes, got, c.want)
		}
	}
}

// procSwitches sums voluntary and involuntary context switches over every
// thread of every pid; what it cannot read counts nothing.
func TestProcSwitches(t *testing.T) {
	proc := t.TempDir()
	status := func(v, nv int) string {
		return fmt.Sprintf("Name:\tpaymentlog\nState:\tS (sleeping)\nvoluntary_ctxt_switches:\t%d\nnonvoluntary_ctxt_switches:\t%d\n", v, nv)
	}
	for path, body := range map[string]string{
		"10/task/10/status": status(100, 5),
		"10/task/11/status": status(40, 1),
		"20/task/20/status": status(7, 0),
		"20/task/21/status": "Name:\tgone\n", // no counters
	} {
		p := filepath.Join(proc, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := procSwitches(proc, []int{10, 20, 30}); got != 153 {
		t.Fatalf("procSwitches = %d, want 153", got)
	}
	if got := procSwitches("/proc", []int{os.Getpid()}); got == 0 {
		t.Fatal("no context switches read for this process")
	}
	if selfSwitches() == 0 {
		t.Fatal("no context switches from getrusage")
	}
}
