package quic

import (
	"context"
	"net"
	"testing"
	"time"

	qgo "github.com/quic-go/quic-go"
)

// A caller whose connection died drops it from the pool while another
// caller may already be dialing the replacement. drop must not read the new
// entry's connection while the dial writes it (go test -race).
func TestPoolDropDuringDial(t *testing.T) {
	// A socket that never answers: the dial runs until its handshake timeout.
	sink, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	addr := sink.LocalAddr().String()
	cli := mustClient(t, Config{HandshakeTimeout: 200 * time.Millisecond})
	dialed := make(chan error, 1)
	go func() {
		_, err := cli.pool.get(context.Background(), addr)
		dialed <- err
	}()
	waitFor(t, 5*time.Second, "the dial to start", func() bool { return poolSize(cli) == 1 })
	stale := &qgo.Conn{} // the caller's dead connection
	cli.pool.drop(addr, stale)
	if poolSize(cli) != 1 {
		t.Fatal("dropping a stale connection removed the dial in progress")
	}
	select {
	case err := <-dialed:
		if err == nil {
			t.Fatal("dial to a silent socket succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("dial did not end")
	}
	cli.pool.drop(addr, stale)
}
