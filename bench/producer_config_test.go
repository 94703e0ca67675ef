package bench

import (
	"testing"

	"paymentlog/client"
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
