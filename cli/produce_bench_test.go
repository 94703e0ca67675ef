package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"paymentlog/client"
)

// lines returns n newline-terminated ~100-byte payment lines.
func benchLines(n int) []byte {
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "{\"id\":\"pay-%09d\",\"amount_cents\":%d,\"currency\":\"EUR\",\"from\":\"acct-%06d\",\"to\":\"acct-%06d\"}\n", i, i%100000, i%9973, i%7919)
	}
	return b.Bytes()
}

// BenchmarkProducePipe pipes lines through `paymentlog produce --json`
// against the QUIC fake cluster (one replica, no disk: this measures the
// client and CLI, not a node). It reports records/s and, as the baseline
// measured in the same run, the speedup over one round trip per line
// (--linger 0 with a synchronous producer).
func BenchmarkProducePipe(b *testing.B) {
	fc := startFakeCluster(b)
	fc.CreateTopic("payments", 3)
	in := benchLines(b.N)
	ctx := context.Background()

	// Baseline: one synchronous round trip per line.
	const baseN = 2000
	cl, err := client.New(ctx, client.Config{Bootstrap: fc.Addrs()})
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close(ctx)
	p, err := cl.NewProducer(client.ProducerConfig{Linger: -1})
	if err != nil {
		b.Fatal(err)
	}
	baseLines := bytes.Split(benchLines(baseN), []byte("\n"))
	start := time.Now()
	for i := 0; i < baseN; i++ {
		if _, err := p.ProduceSync(ctx, &client.Record{Topic: "payments", Value: baseLines[i]}); err != nil {
			b.Fatal(err)
		}
	}
	baseRate := baseN / time.Since(start).Seconds()
	p.Close(ctx)

	b.SetBytes(int64(len(in)) / int64(b.N))
	b.ResetTimer()
	start = time.Now()
	code := runWithInput(ctx, []string{"paymentlog", "produce", "payments", "--json", "--bootstrap", fc.Bootstrap()}, bytes.NewReader(in), io.Discard, io.Discard)
	el := time.Since(start)
	b.StopTimer()
	if code != 0 {
		b.Fatalf("produce exited %d", code)
	}
	rate := float64(b.N) / el.Seconds()
	b.ReportMetric(rate, "records/s")
	b.ReportMetric(rate/baseRate, "x_vs_sync_per_line")
}
