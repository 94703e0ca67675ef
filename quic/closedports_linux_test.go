//go:build linux

package quic

import (
	"context"
	"net"
	"testing"
	"time"

	"golang.org/x/net/ipv4"
)

// closedUDPAddr is a loopback address with no socket behind it: bound, then
// closed (the port is left alone for a while by the kernel's picks).
func closedUDPAddr(t *testing.T) *net.UDPAddr {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
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
	cp := &closedPorts{}
	udp, pc, gro, err := listenUDP("127.0.0.1:0", cp, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	if !gro {
		t.Skip("kernel without UDP_GRO")
	}
	g := pc.(*groConn)
	if g.send == nil || g.recv == nil || g.send.errq == nil || g.recv.errq == nil {
		t.Fatal("the socket's ICMP errors are not read")
	}
	dead := closedUDPAddr(t)
	peer := rawPeer(t, net.IPv4(127, 0, 0, 1))
	live := peer.LocalAddr().(*net.UDPAddr)
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
		if _, err := peer.WriteToUDP([]byte("back"), udp.LocalAddr().(*net.UDPAddr)); err != nil {
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
	dead := closedUDPAddr(t).String()
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
