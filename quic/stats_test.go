package quic

import (
	"context"
	"testing"
	"time"
)

// TestStatsCountOpenAndClosedConnections: both sides count their connection
// and the packets it carried; after the client closes, its counters stay in
// the totals (they only grow) and no connection is open.
func TestStatsCountOpenAndClosedConnections(t *testing.T) {
	srv := mustServe(t, Config{})
	cli := mustClient(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out echoMsg
	for i := range 20 {
		if err := cli.Call(ctx, srv.Addr(), typeEcho, echoMsg{N: int64(i), Data: make([]byte, 4000)}, &out); err != nil {
			t.Fatal(err)
		}
	}
	c, s := cli.Stats(), srv.Stats()
	if c.Conns != 1 || s.Conns != 1 {
		t.Fatalf("open connections: client %d, server %d; want 1 each", c.Conns, s.Conns)
	}
	// 20 requests of 4000 bytes are at least 60 packets each way.
	if c.PacketsSent < 60 || s.PacketsSent < 20 || c.BytesSent < 80_000 {
		t.Fatalf("client %+v, server %+v: too few packets counted", c, s)
	}
	cli.Close()
	waitFor(t, 5*time.Second, "both sides to see the connection closed", func() bool {
		return cli.Stats().Conns == 0 && srv.Stats().Conns == 0
	})
	after := cli.Stats()
	if after.PacketsSent < c.PacketsSent || after.BytesSent < c.BytesSent || after.PacketsLost < c.PacketsLost {
		t.Fatalf("counters went backwards after close: %+v then %+v", c, after)
	}
}
