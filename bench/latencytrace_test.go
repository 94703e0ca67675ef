package bench

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/client/clienttest"
)

// TestLatencyTraceCSV: rows come out in start order under the documented
// header, with a sender that ran late counted in send_late_us and one that
// ran early counted as 0.
func TestLatencyTraceCSV(t *testing.T) {
	tr := newLatencyTrace(10, time.Second, 0)
	base := time.UnixMicro(1_700_000_000_000_000)
	tr.add(base.Add(3*time.Millisecond), base.Add(10*time.Millisecond), base.Add(5*time.Millisecond), 2, 1)
	tr.add(base, base.Add(4*time.Millisecond), base.Add(-time.Millisecond), 0, 0)
	var buf bytes.Buffer
	if err := tr.writeCSV(&buf); err != nil {
		t.Fatal(err)
	}
	want := traceHeader + "\n" +
		"1700000000000000,4000,0,0,0\n" +
		"1700000000003000,7000,2000,2,1\n"
	if got := buf.String(); got != want {
		t.Fatalf("trace:\n%s\nwant:\n%s", got, want)
	}
}

// TestPacedLoadTrace runs a paced load against a fake cluster over QUIC
// and checks the trace a --latency-trace run writes: one row per
// acknowledged record, each within the run, ordered, its parts consistent.
func TestPacedLoadTrace(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fc := clienttest.New(3)
	if err := fc.Serve(ctx); err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	fc.CreateTopic("paced", 3)
	quiet := slog.New(slog.DiscardHandler)
	ps, err := newProducerSet(ctx, client.Config{Bootstrap: fc.Addrs(), Logger: quiet},
		client.ProducerConfig{Linger: 2 * time.Millisecond}, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer ps.close()
	const rate, d = 2000.0, 400 * time.Millisecond
	tr := newLatencyTrace(rate, d, 0)
	before := time.Now()
	res := runLoad(ctx, ps.producers, loadConfig{topic: "paced", partitions: 3, recordSize: 64, rate: rate, duration: d, trace: tr})
	after := time.Now()
	if res.failed != 0 || res.acked < 100 {
		t.Fatalf("paced load: %d acknowledged, %d failed (%v)", res.acked, res.failed, res.firstErr)
	}
	path := filepath.Join(t.TempDir(), "trace.csv")
	if err := tr.writeFile(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if lines[0] != traceHeader || int64(len(lines)-1) != res.acked {
		t.Fatalf("trace has header %q and %d rows, want %q and %d", lines[0], len(lines)-1, traceHeader, res.acked)
	}
	prev := int64(0)
	producers := map[int64]bool{}
	for _, l := range lines[1:] {
		f := strings.Split(l, ",")
		if len(f) != 5 {
			t.Fatalf("row %q: %d fields", l, len(f))
		}
		v := make([]int64, 5)
		for i, s := range f {
			if v[i], err = strconv.ParseInt(s, 10, 64); err != nil {
				t.Fatalf("row %q: %v", l, err)
			}
		}
		start, lat, late, part := v[0], v[1], v[2], v[3]
		switch {
		case start < prev:
			t.Fatalf("row %q before the previous start %d", l, prev)
		case start < before.UnixMicro() || start+lat > after.UnixMicro():
			t.Fatalf("row %q outside the run [%d, %d]", l, before.UnixMicro(), after.UnixMicro())
		case late < 0 || late > lat || part < 0 || part > 2:
			t.Fatalf("row %q: inconsistent", l)
		}
		prev = start
		producers[v[4]] = true
	}
	if len(producers) != 2 {
		t.Fatalf("rows from producers %v, want both", producers)
	}
}
