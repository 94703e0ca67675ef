package bench

import (
	"context"
	"testing"
	"time"
)

func TestTransportBaseline(t *testing.T) {
	res, err := runTransport(context.Background(), TransportConfig{Duration: 200 * time.Millisecond, Rounds: 2, Streams: 2, Chunk: 32 << 10}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.MBPerSec <= 0 || len(res.Rounds) != 2 || res.Cipher == "" {
		t.Fatalf("%+v", res)
	}
	// Moving a MB over loopback QUIC with AES-GCM costs some CPU at both
	// ends, and less than a second of it (a round lasted 200 ms).
	if len(res.CPURounds) != 2 || res.CPUMsPerMB <= 0 || res.CPUMsPerMB > 1000 {
		t.Fatalf("CPU per MB %v ms (rounds %v)", res.CPUMsPerMB, res.CPURounds)
	}
	t.Logf("raw QUIC: %.1f MB/s (%v), %.2f ms of CPU per MB (%v), cipher %s", res.MBPerSec, res.Rounds, res.CPUMsPerMB, res.CPURounds, res.Cipher)
}
