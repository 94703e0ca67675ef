package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"paymentlog/client"
)

// syntheticFailover is a 4-second run at 1000 records/s over 2 partitions
// with one outage of partition 0 between 1.0s and 1.4s.
func syntheticFailover() *FailoverResult {
	start := time.Unix(1000, 0)
	tl := &ackTimeline{start: start}
	for i := 0; i < 4000; i++ {
		at := start.Add(time.Duration(i) * time.Millisecond)
		part := int32(i % 2)
		if part == 0 && at.Sub(start) > time.Second && at.Sub(start) < 1400*time.Millisecond {
			continue
		}
		tl.add(client.Delivery{Partition: part, Offset: int64(i / 2)}, recordID{seq: uint64(i)}, at)
	}
	tr := FailoverTrial{Trial: 1, killAt: start.Add(time.Second), fenceAt: start.Add(1300 * time.Millisecond), leaderAt: start.Add(1350 * time.Millisecond)}
	return &FailoverResult{Rate: 1000, Partitions: 2, Seconds: 4, Trials: []FailoverTrial{tr}, timeline: tl}
}

func TestWritePlot(t *testing.T) {
	fo := syntheticFailover()
	dir := t.TempDir()
	for _, name := range []string{"failover.svg", "failover.png"} {
		path := filepath.Join(dir, name)
		if out := os.Getenv("BENCH_PLOT_OUT"); out != "" {
			path = filepath.Join(out, name)
		}
		if err := writePlot(path, fo); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".svg") && (!strings.Contains(string(b), "<svg") || !strings.Contains(string(b), "new leader")) {
			t.Fatalf("%s does not look like the plot", name)
		}
	}
}
