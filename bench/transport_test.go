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
	t.Logf("raw QUIC: %.1f MB/s (%v), cipher %s", res.MBPerSec, res.Rounds, res.Cipher)
}
