//go:build linux

package quic

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// rawPeer is a plain socket on ip that the raw paths talk to.
func rawPeer(t *testing.T, ip net.IP) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: ip})
	if err != nil {
		t.Skipf("no %s socket: %v", ip, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestRawSendReachesThePeer(t *testing.T) {
	for _, tc := range []struct {
		name     string
		local    string
		peer     net.IP
		wantFrom net.IP
	}{
		{"ipv4", "127.0.0.1:0", net.IPv4(127, 0, 0, 1), net.IPv4(127, 0, 0, 1)},
		{"ipv6", "[::1]:0", net.IPv6loopback, net.IPv6loopback},
		{"dual-stack socket to ipv4", ":0", net.IPv4(127, 0, 0, 1), net.IPv4(127, 0, 0, 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			udp, pc, gro, err := listenUDP(tc.local, &closedPorts{}, quietLogger())
			if err != nil {
				t.Skipf("no socket on %s: %v", tc.local, err)
			}
			defer udp.Close()
			if !gro {
				t.Skip("kernel without UDP_GRO")
			}
			g := pc.(*groConn)
			if g.send == nil {
				t.Fatal("groConn sends through the scheduler's system calls")
			}
			peer := rawPeer(t, tc.peer)
			dst := peer.LocalAddr().(*net.UDPAddr)
			const seg = 1000
			train := make([]byte, 3*seg+10)
			for i := range train {
				train[i] = byte(i / seg)
			}
			if n, oobn, err := g.WriteMsgUDP([]byte("single"), nil, dst); err != nil || n != 6 || oobn != 0 {
				t.Fatalf("WriteMsgUDP = %d, %d, %v", n, oobn, err)
			}
			if n, _, err := g.WriteMsgUDP(train, gsoControl(seg), dst); err != nil || n != len(train) {
				t.Fatalf("WriteMsgUDP of a train = %d, %v", n, err)
			}
			want := [][]byte{[]byte("single"), train[:seg], train[seg : 2*seg], train[2*seg : 3*seg], train[3*seg:]}
			port := udp.LocalAddr().(*net.UDPAddr).Port
			buf := make([]byte, 2000)
			peer.SetReadDeadline(time.Now().Add(5 * time.Second))
			for i, w := range want {
				n, from, err := peer.ReadFromUDP(buf)
				if err != nil {
					t.Fatalf("datagram %d: %v", i, err)
				}
				if !bytes.Equal(buf[:n], w) {
					t.Fatalf("datagram %d: %d bytes, want %d", i, n, len(w))
				}
				if from.Port != port || !from.IP.Equal(tc.wantFrom) {
					t.Fatalf("datagram %d from %v, want %v port %d", i, from, tc.wantFrom, port)
				}
			}
		})
	}
}

// Errors keep the shape quic-go inspects: a *os.SyscallError named
// "sendmsg" (its GSO and permission checks), matching the errno with
// errors.Is (its check for a packet too large for the path).
func TestRawSendErrors(t *testing.T) {
	g := newGRO(t, net.IPv4(127, 0, 0, 1))
	peer := rawPeer(t, net.IPv4(127, 0, 0, 1)).LocalAddr().(*net.UDPAddr)
	for _, tc := range []struct {
		name string
		b    []byte
		dst  *net.UDPAddr
		want unix.Errno
	}{
		{"ipv6 peer of an ipv4 socket", []byte("x"), &net.UDPAddr{IP: net.IPv6loopback, Port: 9}, unix.EAFNOSUPPORT},
		{"datagram too large", make([]byte, 70000), peer, unix.EMSGSIZE},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := g.WriteMsgUDP(tc.b, nil, tc.dst)
			var serr *os.SyscallError
			if !errors.As(err, &serr) || serr.Syscall != "sendmsg" || !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want a sendmsg error %v", err, tc.want)
			}
		})
	}
}

func TestRawSendAllocatesNothing(t *testing.T) {
	g := newGRO(t, net.IPv4(127, 0, 0, 1))
	peer := rawPeer(t, net.IPv4(127, 0, 0, 1))
	dst := peer.LocalAddr().(*net.UDPAddr)
	b := []byte("payload")
	if allocs := testing.AllocsPerRun(100, func() {
		if _, _, err := g.WriteMsgUDP(b, nil, dst); err != nil {
			t.Fatal(err)
		}
	}); allocs > 0 {
		t.Fatalf("%v allocations per send", allocs)
	}
}

// Each packet read names its sender, for IPv4 and IPv6, and a sender seen
// before costs no allocation.
func TestRawReceiveNamesTheSender(t *testing.T) {
	for _, tc := range []struct {
		name        string
		local, peer net.IP
	}{
		{"ipv4", net.IPv4(127, 0, 0, 1), net.IPv4(127, 0, 0, 1)},
		{"ipv6", net.IPv6loopback, net.IPv6loopback},
		{"dual-stack socket from ipv4", net.IPv6unspecified, net.IPv4(127, 0, 0, 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGRO(t, tc.local)
			if g.recv == nil {
				t.Fatal("groConn reads through the scheduler's system calls")
			}
			dst := &net.UDPAddr{IP: tc.peer, Port: g.LocalAddr().(*net.UDPAddr).Port}
			senders := []*net.UDPConn{rawPeer(t, tc.peer), rawPeer(t, tc.peer)}
			for round := range 3 {
				for i, s := range senders {
					if _, err := s.WriteToUDP([]byte{byte(i), byte(round)}, dst); err != nil {
						t.Fatal(err)
					}
				}
			}
			g.SetReadDeadline(time.Now().Add(5 * time.Second))
			for k := 0; k < 6; {
				ms := slots(4)
				n, err := g.ReadBatch(ms, 0)
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range ms[:n] {
					from, ok := m.Addr.(*net.UDPAddr)
					if !ok {
						t.Fatalf("source address %T", m.Addr)
					}
					want := senders[m.Buffers[0][0]].LocalAddr().(*net.UDPAddr)
					if from.Port != want.Port || !from.IP.Equal(want.IP) {
						t.Fatalf("packet from %v, want %v", from, want)
					}
					k++
				}
			}
			if len(g.recv.addrs) != 2 {
				t.Fatalf("%d peer addresses cached, want 2", len(g.recv.addrs))
			}
		})
	}
}

// quic-go sends and reads every packet of an endpoint through the raw
// paths: were it to stop calling groConn's WriteMsgUDP or ReadBatch (an
// interface change in an upgrade), the endpoints would still work, only
// slower, and this test would say so.
func TestEndpointsUseTheRawPaths(t *testing.T) {
	srv := mustServe(t, Config{})
	cli := mustClient(t, Config{})
	var m echoMsg
	if err := cli.Call(context.Background(), srv.Addr(), typeEcho, echoMsg{N: 7}, &m); err != nil || m.N != 7 {
		t.Fatalf("Call = %+v, %v", m, err)
	}
	for name, e := range map[string]*Endpoint{"server": srv, "client": cli} {
		g, ok := e.tr.Conn.(*groConn)
		if !ok {
			t.Skipf("%s socket without receive offload (%T)", name, e.tr.Conn)
		}
		if g.send == nil || g.send.sends.Load() == 0 {
			t.Errorf("%s: quic-go sent nothing through the raw sendmsg", name)
		}
		if g.recv == nil || g.recv.reads.Load() == 0 {
			t.Errorf("%s: quic-go read nothing through the raw recvmmsg", name)
		}
	}
}
