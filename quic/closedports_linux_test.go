//go:build linux

package quic

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// closedUDPAddr is a loopback address with no socket behind it: bound, then
// closed (the port is left alone for a while by the kernel's picks).
func closedUDPAddr(t *testing.T, ip net.IP) *net.UDPAddr {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: ip})
	if err != nil {
		t.Fatal(err)
	}
	a := c.LocalAddr().(*net.UDPAddr)
	c.Close()
	return a
}

// A datagram to a closed port draws an ICMP port unreachable, which the
// kernel leaves pending on the socket: without the error queue read, the
// next send or receive on the socket, to or from anyone, would fail with
// ECONNREFUSED. Here every send to a live peer and every read goes through,
// and the closed port is recorded.
func TestICMPErrorsAreReadNotReturned(t *testing.T) {
	for _, tc := range []struct {
		name  string
		local string
		peer  net.IP
	}{
		{"ipv4", "127.0.0.1:0", net.IPv4(127, 0, 0, 1)},
		{"ipv6", "[::1]:0", net.IPv6loopback},
		{"dual-stack socket to ipv4", ":0", net.IPv4(127, 0, 0, 1)},
	} {
		t.Run(tc.name, func(t *testing.T) { icmpErrorsAreRead(t, tc.local, tc.peer) })
	}
}

func icmpErrorsAreRead(t *testing.T, local string, peerIP net.IP) {
	cp := &closedPorts{}
	udp, pc, gro, err := listenUDP(local, cp, quietLogger())
	if err != nil {
		t.Skipf("no socket on %s: %v", local, err)
	}
	defer udp.Close()
	if !gro {
		t.Skip("kernel without UDP_GRO")
	}
	g := pc.(*groConn)
	if g.send == nil || g.recv == nil || g.send.errq == nil || g.recv.errq == nil {
		t.Fatal("the socket's ICMP errors are not read")
	}
	dead := closedUDPAddr(t, peerIP)
	peer := rawPeer(t, peerIP)
	live := peer.LocalAddr().(*net.UDPAddr)
	self := &net.UDPAddr{IP: peerIP, Port: udp.LocalAddr().(*net.UDPAddr).Port}
	before := time.Now()

	const rounds = 20
	for i := range rounds {
		if _, _, err := g.WriteMsgUDP([]byte("to the dead"), nil, dead); err != nil {
			t.Fatalf("round %d: send to the closed port: %v", i, err)
		}
		if n, _, err := g.WriteMsgUDP([]byte("live"), nil, live); err != nil || n != 4 {
			t.Fatalf("round %d: send to a live peer after one to a closed port = %d, %v", i, n, err)
		}
	}
	buf := make([]byte, 100)
	peer.SetReadDeadline(time.Now().Add(5 * time.Second))
	for i := range rounds {
		if n, _, err := peer.ReadFromUDP(buf); err != nil || string(buf[:n]) != "live" {
			t.Fatalf("datagram %d at the live peer: %q, %v", i, buf[:n], err)
		}
	}

	ms := make([]ipv4.Message, 4)
	for i := range ms {
		ms[i].Buffers = [][]byte{make([]byte, 1500)}
		ms[i].OOB = make([]byte, 128)
	}
	for i := range rounds {
		if _, _, err := g.WriteMsgUDP([]byte("to the dead"), nil, dead); err != nil {
			t.Fatalf("round %d: send to the closed port: %v", i, err)
		}
		if _, err := peer.WriteToUDP([]byte("back"), self); err != nil {
			t.Fatal(err)
		}
		n, err := g.ReadBatch(ms, 0)
		if err != nil || n != 1 || string(ms[0].Buffers[0][:ms[0].N]) != "back" {
			t.Fatalf("round %d: read after a send to a closed port = %d, %v", i, n, err)
		}
	}
	if !cp.since(dead.AddrPort(), before) {
		t.Fatalf("%v not recorded as closed (%d port errors read)", dead, cp.found.Load())
	}
	if cp.since(live.AddrPort(), before) {
		t.Fatalf("the live peer %v recorded as closed", live)
	}
	if cp.since(dead.AddrPort(), time.Now()) {
		t.Fatal("a closed port recorded in the future")
	}
}

// An endpoint dialing a dead address keeps its other connections (quic-go
// closes a connection on a failed send and the transport on a failed read)
// and answers PortClosedSince for the dead one.
func TestEndpointKeepsWorkingBesideAClosedPort(t *testing.T) {
	srv := mustServe(t, Config{})
	cli := mustClient(t, Config{})
	ctx := context.Background()
	var resp echoMsg
	if err := cli.Call(ctx, srv.Addr(), typeEcho, echoMsg{N: 1}, &resp); err != nil {
		t.Fatal(err)
	}
	conn := func() any {
		cli.pool.mu.Lock()
		defer cli.pool.mu.Unlock()
		if e := cli.pool.mu.conns[srv.Addr()]; e != nil {
			return e.conn
		}
		return nil
	}
	first := conn()
	dead := closedUDPAddr(t, net.IPv4(127, 0, 0, 1)).String()
	since := time.Now()
	dialed := make(chan error, 1)
	go func() {
		dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		dialed <- cli.Call(dctx, dead, typeEcho, echoMsg{N: 2}, &echoMsg{})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; !cli.PortClosedSince(dead, since); i++ {
		if time.Now().After(deadline) {
			t.Fatalf("%s not found closed after %d calls beside its dial", dead, i)
		}
		if err := cli.Call(ctx, srv.Addr(), typeEcho, echoMsg{N: int64(i)}, &resp); err != nil || resp.N != int64(i) {
			t.Fatalf("call %d to the live peer beside a dial of a closed port: %v", i, err)
		}
	}
	for i := range 20 {
		if err := cli.Call(ctx, srv.Addr(), typeEcho, echoMsg{N: int64(i)}, &resp); err != nil {
			t.Fatalf("call %d to the live peer after the closed port was found: %v", i, err)
		}
	}
	if err := <-dialed; err == nil {
		t.Fatal("a call to a closed port succeeded")
	}
	if conn() != first {
		t.Fatal("the connection to the live peer was replaced")
	}
	if cli.PortClosedSince(srv.Addr(), since) {
		t.Fatal("the live peer's port found closed")
	}
	if cli.PortClosedSince(dead, time.Now()) {
		t.Fatal("a closed port found in the future")
	}
	if got := cli.Stats().PortsClosed; got == 0 {
		t.Fatal("Stats counts no closed port")
	}
}

// recvErrControl is an error-queue entry's control message: a
// sock_extended_err of origin, type and code at level/typ.
func recvErrControl(level, typ int32, origin, icmpType, code uint8) []byte {
	b := make([]byte, unix.CmsgSpace(16))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = level, typ
	h.SetLen(unix.CmsgLen(16))
	ee := b[unix.CmsgLen(0):]
	binary.NativeEndian.PutUint32(ee, uint32(unix.ECONNREFUSED))
	ee[4], ee[5], ee[6] = origin, icmpType, code
	return b
}

func TestPortUnreachableParsesOnlyPortErrors(t *testing.T) {
	var sa4 unix.RawSockaddrInet6
	(*unix.RawSockaddrInet4)(unsafe.Pointer(&sa4)).Family = unix.AF_INET
	(*unix.RawSockaddrInet4)(unsafe.Pointer(&sa4)).Addr = [4]byte{10, 0, 0, 7}
	putPort(&(*unix.RawSockaddrInet4)(unsafe.Pointer(&sa4)).Port, 9092)
	want := netip.MustParseAddrPort("10.0.0.7:9092")
	for _, tc := range []struct {
		name string
		ctrl []byte
		ok   bool
	}{
		{"icmp port unreachable", recvErrControl(unix.IPPROTO_IP, unix.IP_RECVERR, unix.SO_EE_ORIGIN_ICMP, 3, 3), true},
		{"icmp6 port unreachable", recvErrControl(unix.IPPROTO_IPV6, unix.IPV6_RECVERR, unix.SO_EE_ORIGIN_ICMP6, 1, 4), true},
		{"icmp host unreachable", recvErrControl(unix.IPPROTO_IP, unix.IP_RECVERR, unix.SO_EE_ORIGIN_ICMP, 3, 1), false},
		{"icmp frag needed", recvErrControl(unix.IPPROTO_IP, unix.IP_RECVERR, unix.SO_EE_ORIGIN_ICMP, 3, 4), false},
		{"local error", recvErrControl(unix.IPPROTO_IP, unix.IP_RECVERR, unix.SO_EE_ORIGIN_LOCAL, 3, 3), false},
		{"another control message", recvErrControl(unix.IPPROTO_IP, unix.IP_TOS, unix.SO_EE_ORIGIN_ICMP, 3, 3), false},
		{"truncated", recvErrControl(unix.IPPROTO_IP, unix.IP_RECVERR, unix.SO_EE_ORIGIN_ICMP, 3, 3)[:unix.CmsgLen(4)], false},
		{"empty", nil, false},
	} {
		got, ok := portUnreachable(tc.ctrl, &sa4)
		if ok != tc.ok || (ok && got != want) {
			t.Errorf("%s: %v, %v; want ok=%v", tc.name, got, ok, tc.ok)
		}
	}
}

// FuzzPortUnreachable: any control bytes and sockaddr parse without a
// panic, and a finding is a valid address.
func FuzzPortUnreachable(f *testing.F) {
	f.Add(recvErrControl(unix.IPPROTO_IP, unix.IP_RECVERR, unix.SO_EE_ORIGIN_ICMP, 3, 3), []byte{2, 0, 0x23, 0x84, 10, 0, 0, 7})
	f.Add(recvErrControl(unix.IPPROTO_IPV6, unix.IPV6_RECVERR, unix.SO_EE_ORIGIN_ICMP6, 1, 4), []byte{10, 0, 0x23, 0x84})
	f.Fuzz(func(t *testing.T, ctrl, name []byte) {
		var sa unix.RawSockaddrInet6
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&sa)), unsafe.Sizeof(sa)), name)
		if ap, ok := portUnreachable(ctrl, &sa); ok && !ap.IsValid() {
			t.Fatalf("finding %v is not a valid address", ap)
		}
	})
}

// notPollable fails its first reads as Go's poller does after a wakeup
// that carried only EPOLLERR (pollEventErr).
type notPollable struct {
	syscall.RawConn
	left atomic.Int32
}

func (c *notPollable) Read(f func(uintptr) bool) error {
	if c.left.Add(-1) >= 0 {
		return &net.OpError{Op: "raw-read", Net: "udp", Err: errors.New("not pollable")}
	}
	return c.RawConn.Read(f)
}

// notPollableSocket is an endpoint socket (closed at the test's end) whose
// poller fails its first n reads as after an error-only wakeup (notPollable).
func notPollableSocket(t *testing.T, n int32) (*net.UDPConn, *groConn) {
	t.Helper()
	udp, pc, gro, err := listenUDP("127.0.0.1:0", &closedPorts{}, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { udp.Close() })
	if !gro {
		t.Skip("kernel without UDP_GRO")
	}
	g := pc.(*groConn)
	if g.recv == nil || g.recv.errq == nil {
		t.Fatal("the socket's ICMP errors are not read")
	}
	np := &notPollable{RawConn: g.recv.raw}
	np.left.Store(n)
	g.recv.raw = np
	return udp, g
}

// A read the poller fails after an ICMP error alone woke it is made past
// the poller, instead of reaching quic-go (which would close the
// transport): a datagram already there is read at once.
func TestReadFailedByAnErrorWakeupIsMadeAgain(t *testing.T) {
	udp, g := notPollableSocket(t, 3)
	peer := rawPeer(t, net.IPv4(127, 0, 0, 1))
	if _, err := peer.WriteToUDP([]byte("after"), udp.LocalAddr().(*net.UDPAddr)); err != nil {
		t.Fatal(err)
	}
	ms := []ipv4.Message{{Buffers: [][]byte{make([]byte, 1500)}, OOB: make([]byte, 128)}}
	n, err := g.ReadBatch(ms, 0)
	if err != nil || n != 1 || string(ms[0].Buffers[0][:ms[0].N]) != "after" {
		t.Fatalf("read after the poller failed it = %d, %v", n, err)
	}
	if got := g.recv.pollErrs.Load(); got != 1 {
		t.Fatalf("%d reads failed by the poller counted, want 1 (the datagram read past it)", got)
	}
	if got := g.pollErrorReads(); got != 1 {
		t.Fatalf("the socket reports %d reads failed by the poller (Stats), want 1", got)
	}
	udp.Close()
	if _, err := g.ReadBatch(ms, 0); err == nil {
		t.Fatal("a read of a closed socket succeeded")
	}
}

// While the poller keeps failing reads, a datagram that arrives later is
// still read, as soon as poll(2) sees it: the reader used to sleep up to
// 20 ms between tries and read only once the poller had the socket's next
// event, so every peer's packets waited.
func TestDatagramArrivingWhileThePollerFailsIsRead(t *testing.T) {
	udp, g := notPollableSocket(t, 1<<30) // the poller never recovers
	type result struct {
		n   int
		err error
	}
	ms := []ipv4.Message{{Buffers: [][]byte{make([]byte, 1500)}, OOB: make([]byte, 128)}}
	done := make(chan result, 1)
	go func() {
		n, err := g.ReadBatch(ms, 0)
		done <- result{n, err}
	}()
	// The reader waits past the poller before the datagram comes.
	deadline := time.Now().Add(10 * time.Second)
	for g.recv.pollErrs.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the reader never waited past the poller")
		}
		runtime.Gosched()
	}
	peer := rawPeer(t, net.IPv4(127, 0, 0, 1))
	if _, err := peer.WriteToUDP([]byte("later"), udp.LocalAddr().(*net.UDPAddr)); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.err != nil || r.n != 1 || string(ms[0].Buffers[0][:ms[0].N]) != "later" {
			t.Fatalf("read while the poller fails = %d, %v", r.n, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a datagram that arrived while the poller failed reads was never read")
	}
}
