package bench

import (
	"testing"

	"paymentlog/client"
	"paymentlog/segment"
)

// --linger 0 must mean "send at once", as it does for `paymentlog produce`:
// the client reads a zero Linger as its 5ms default, so passing 0 through
// silently measured a 5ms linger.
func TestLingerZeroSendsAtOnce(t *testing.T) {
	tc := DefaultConfig().Throughput
	if got := tc.producerConfig().Linger; got != client.DefaultLinger {
		t.Fatalf("default linger reaches the client as %v, want %v", got, client.DefaultLinger)
	}
	tc.Linger = 0
	if got := tc.producerConfig().Linger; got >= 0 {
		t.Fatalf("--linger 0 reaches the client as %v, want a negative linger (send at once)", got)
	}
}

// --compression reaches the producers, by name; the default sends batches
// as they are.
func TestCompressionReachesTheProducers(t *testing.T) {
	tc := DefaultConfig().Throughput
	if got := tc.producerConfig().Compression; got != segment.CodecNone {
		t.Fatalf("default compression reaches the client as %v", got)
	}
	for name, want := range map[string]segment.Codec{"lz4": segment.CodecLZ4, "zstd": segment.CodecZstd} {
		tc.Compression = name
		if got := tc.producerConfig().Compression; got != want {
			t.Errorf("--compression %s reaches the client as %v", name, got)
		}
	}
}
