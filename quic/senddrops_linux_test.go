//go:build linux

package quic

import (
	"context"
	"io"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSendDropsDoNotCloseTheConnection: datagrams the host drops on their way
// out (a full qdisc queue: sendmsg fails with ENOBUFS once IP_RECVERR is on)
// are lost packets, not a failed connection. The test runs in a network
// namespace of its own whose loopback has a small tbf queue, and pushes a
// bulk stream through it: every overflow of the queue is such a drop. Before
// the raw sender took ENOBUFS as a loss, quic-go closed the connection on the
// first one ("sendmsg: no buffer space available").
func TestSendDropsDoNotCloseTheConnection(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a network namespace of its own")
	}
	for _, tool := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (iproute2)", tool)
		}
	}
	// The test's goroutine keeps this thread, moved into a new network
	// namespace, and never unlocks it: the runtime ends the thread with
	// the goroutine. Sockets keep the namespace they were made in, so the
	// endpoints' own goroutines may run anywhere; the commands run here
	// are forked from this thread and inherit its namespace.
	runtime.LockOSThread()
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		t.Skipf("no network namespace: %v", err)
	}
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Skipf("%v: %v: %s", args, err, out)
		}
	}
	run("ip", "link", "set", "lo", "up")
	// 40 Mbit/s with room for 12 full packets: quic-go's first flight and
	// every GSO train overflow it.
	run("tc", "qdisc", "add", "dev", "lo", "root", "tbf", "rate", "40mbit", "burst", "16kb", "limit", "16kb")

	srv := mustServe(t, Config{})
	registerBenchHandlers(srv)
	cli := mustClient(t, Config{})
	if _, ok := cli.tr.Conn.(*groConn); !ok {
		t.Skip("no raw sender on this kernel (UDP_GRO refused): IP_RECVERR stays off and the kernel hides the drops")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const round, rounds = 1 << 20, 2
	s, err := cli.OpenSession(ctx, srv.Addr(), typeRawSink, round)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	payload := make([]byte, round)
	for i := range rounds {
		if _, err := s.str.Write(payload); err != nil {
			t.Fatalf("round %d: write: %v (send drops so far: %d)", i, err, cli.Stats().SendDrops)
		}
		var ack [1]byte
		if _, err := io.ReadFull(s.str, ack[:]); err != nil {
			t.Fatalf("round %d: ack: %v (send drops so far: %d)", i, err, cli.Stats().SendDrops)
		}
	}
	st := cli.Stats()
	if st.SendDrops == 0 {
		t.Fatalf("no send drops counted (%d packets sent, %d lost): the queue never overflowed, so the test proved nothing", st.PacketsSent, st.PacketsLost)
	}
	if st.Conns != 1 {
		t.Fatalf("%d connections open after the transfer, want the one it started on", st.Conns)
	}
	t.Logf("%d send drops, %d of %d packets declared lost", st.SendDrops, st.PacketsLost, st.PacketsSent)
}
