//go:build linux

package quic

import (
	"context"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBurstsAreNotDroppedAtOneP: at GOMAXPROCS 1 (a local node's share of a
// small machine), 64 MiB sent as fast as the stream allows arrive without a
// single packet that the sender's loss detection declares lost. Before the
// reader yielded (groConn.ReadBatch, yieldEvery), quic-go's reader handed a
// whole socket's worth of GSO trains to the connection's queue, which drops
// every packet past 256, while the connection's goroutine could not run.
func TestBurstsAreNotDroppedAtOneP(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 64 MiB")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	srv := mustServe(t, Config{})
	registerBenchHandlers(srv)
	cli := mustClient(t, Config{})
	if _, ok := srv.tr.Conn.(*groConn); !ok {
		t.Skip("no receive offload on this kernel: quic-go reads datagram by datagram")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const chunk, rounds, perRound = 1 << 20, 8, 8
	s, err := cli.OpenSession(ctx, srv.Addr(), typeRawSink, int64(perRound*chunk))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	kernelDrops := udpRcvbufErrors(t)
	payload := make([]byte, chunk)
	for range rounds {
		for range perRound {
			if _, err := s.str.Write(payload); err != nil {
				t.Fatal(err)
			}
		}
		var ack [1]byte
		if _, err := io.ReadFull(s.str, ack[:]); err != nil {
			t.Fatal(err)
		}
	}
	// Datagrams the kernel dropped for a full socket buffer (counted for
	// the whole machine: other tests' too) are not what this test is about.
	kernelDrops = udpRcvbufErrors(t) - kernelDrops
	if st := cli.Stats(); st.PacketsLost > kernelDrops {
		t.Fatalf("%d of %d packets declared lost on loopback at GOMAXPROCS 1 (the kernel dropped %d datagrams)", st.PacketsLost, st.PacketsSent, kernelDrops)
	}
}

// udpRcvbufErrors reads the kernel's count of UDP datagrams dropped for a
// full receive buffer (Udp RcvbufErrors in /proc/net/snmp).
func udpRcvbufErrors(t *testing.T) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/net/snmp")
	if err != nil {
		t.Skipf("no UDP counters: %v", err)
	}
	var names []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "Udp:" {
			continue
		}
		if names == nil {
			names = f
			continue
		}
		for i, v := range f {
			if i < len(names) && names[i] == "RcvbufErrors" {
				n, err := strconv.ParseUint(v, 10, 64)
				if err != nil {
					t.Fatalf("/proc/net/snmp: RcvbufErrors %q", v)
				}
				return n
			}
		}
	}
	t.Skip("/proc/net/snmp has no Udp RcvbufErrors")
	return 0
}
