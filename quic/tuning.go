package quic

import (
	"log/slog"
	"net"
	"os"
	"sync"

	qgo "github.com/quic-go/quic-go"
)

// Flow-control windows. Replication moves whole batches (up to a frame of
// 16 MiB) over one stream, so the stream window must hold a large frame in
// flight and the connection window several of them. quic-go auto-tunes from
// the initial to the maximum value as the reader keeps up; the windows are
// credit, not preallocated memory.
const (
	initialStreamWindow = 4 << 20
	maxStreamWindow     = 32 << 20
	initialConnWindow   = 8 << 20
	maxConnWindow       = 64 << 20
)

// quicConfig builds quic-go's configuration. Dialed connections accept no
// streams from the server: requests only flow from the dialer.
func quicConfig(c Config, server bool) *qgo.Config {
	incoming := c.MaxIncomingStreams
	if !server {
		incoming = -1
	}
	return &qgo.Config{
		HandshakeIdleTimeout:           c.HandshakeTimeout,
		MaxIdleTimeout:                 c.IdleTimeout,
		KeepAlivePeriod:                c.KeepAlivePeriod,
		MaxIncomingStreams:             incoming,
		MaxIncomingUniStreams:          -1,
		InitialStreamReceiveWindow:     initialStreamWindow,
		MaxStreamReceiveWindow:         maxStreamWindow,
		InitialConnectionReceiveWindow: initialConnWindow,
		MaxConnectionReceiveWindow:     maxConnWindow,
	}
}

// udpBufferSize is what quic-go asks the kernel for (it warns below it).
const udpBufferSize = 7 << 20

var udpWarnOnce sync.Once

// tuneUDPBuffers asks for 7 MiB socket buffers; as root it forces them past
// net.core.rmem_max/wmem_max. When the kernel refuses it says once what to
// set, and silences quic-go's own (duplicate) warning.
func tuneUDPBuffers(c *net.UDPConn, log *slog.Logger) {
	rcv, snd := setUDPBuffers(c, udpBufferSize)
	if rcv >= udpBufferSize && snd >= udpBufferSize {
		return
	}
	udpWarnOnce.Do(func() {
		log.Warn("quic: the kernel limits UDP socket buffers below the 7 MiB QUIC wants; throughput may suffer. "+
			"Fix: sysctl -w net.core.rmem_max=7500000 net.core.wmem_max=7500000",
			"rcvbuf_kib", rcv/1024, "sndbuf_kib", snd/1024)
		if os.Getenv("QUIC_GO_DISABLE_RECEIVE_BUFFER_WARNING") == "" {
			os.Setenv("QUIC_GO_DISABLE_RECEIVE_BUFFER_WARNING", "true")
		}
	})
}
