//go:build linux

package quic

import (
	"bytes"
	"encoding/binary"
	"log/slog"
	"net"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// gsoControl is the control message that makes one sendmsg a train of
// seg-byte datagrams (UDP_SEGMENT).
func gsoControl(seg uint16) []byte {
	b := make([]byte, unix.CmsgSpace(2))
	h := (*unix.Cmsghdr)(unsafePointer(b))
	h.Level = unix.IPPROTO_UDP
	h.Type = unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	binary.NativeEndian.PutUint16(b[unix.CmsgLen(0):], seg)
	return b
}

func slots(n int) []ipv4.Message {
	ms := make([]ipv4.Message, n)
	for i := range ms {
		ms[i].Buffers = [][]byte{make([]byte, 1452)}
		ms[i].OOB = make([]byte, 128)
	}
	return ms
}

// readPackets reads until want packets arrived or the deadline passes.
func readPackets(t *testing.T, g *groConn, perCall int, want int) [][]byte {
	t.Helper()
	if err := g.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	var got [][]byte
	for len(got) < want {
		ms := slots(perCall)
		n, err := g.ReadBatch(ms, 0)
		if err != nil {
			t.Fatalf("ReadBatch after %d of %d packets: %v", len(got), want, err)
		}
		if n > perCall {
			t.Fatalf("ReadBatch returned %d messages for %d slots", n, perCall)
		}
		for _, m := range ms[:n] {
			if m.Addr == nil {
				t.Fatal("message without a source address")
			}
			if seg := groSegmentSize(m.OOB[:m.NN]); seg != 0 {
				t.Fatalf("the UDP_GRO control message was handed on (segment size %d)", seg)
			}
			got = append(got, append([]byte(nil), m.Buffers[0][:m.N]...))
		}
	}
	return got
}

func newGRO(t *testing.T, ip net.IP) *groConn {
	t.Helper()
	udp, pc, gro, err := listenUDP(net.JoinHostPort(ip.String(), "0"), &closedPorts{}, slog.Default())
	if err != nil {
		t.Skipf("no %s socket: %v", ip, err)
	}
	t.Cleanup(func() { udp.Close() })
	if !gro {
		t.Skip("kernel without UDP_GRO")
	}
	return pc.(*groConn)
}

// A GSO train arrives coalesced and comes out as its datagrams, in order,
// across calls with fewer slots than segments; plain datagrams pass as they are.
func TestGROSplitsTrainsIntoPackets(t *testing.T) {
	for _, ip := range []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback} {
		t.Run(ip.String(), func(t *testing.T) { testGROSplitsTrains(t, ip) })
	}
}

func testGROSplitsTrains(t *testing.T, ip net.IP) {
	g := newGRO(t, ip)
	snd, err := net.ListenUDP("udp", &net.UDPAddr{IP: ip})
	if err != nil {
		t.Fatal(err)
	}
	defer snd.Close()
	dst := g.LocalAddr().(*net.UDPAddr)

	const seg = 1000
	train := make([]byte, 5*seg+500) // five full segments and a short last one
	for i := range train {
		train[i] = byte(i / seg)
	}
	if _, _, err := snd.WriteMsgUDP(train, gsoControl(seg), dst); err != nil {
		t.Skipf("sender without GSO: %v", err)
	}
	if _, err := snd.WriteToUDP([]byte("single"), dst); err != nil {
		t.Fatal(err)
	}
	if _, _, err := snd.WriteMsgUDP(train[:2*seg], gsoControl(seg), dst); err != nil {
		t.Fatal(err)
	}

	got := readPackets(t, g, 4, 6+1+2)
	if g.trains != 2 {
		t.Errorf("%d coalesced reads, want 2 (the kernel split the trains)", g.trains)
	}
	var want [][]byte
	for off := 0; off < len(train); off += seg {
		want = append(want, train[off:min(off+seg, len(train))])
	}
	want = append(want, []byte("single"), train[:seg], train[seg:2*seg])
	if len(got) != len(want) {
		t.Fatalf("got %d packets, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("packet %d: got %d bytes starting %v, want %d bytes starting %v",
				i, len(got[i]), got[i][:min(4, len(got[i]))], len(want[i]), want[i][:min(4, len(want[i]))])
		}
	}
}

// Many small datagrams from several senders all arrive, none merged across senders.
func TestGROPlainDatagrams(t *testing.T) {
	g := newGRO(t, net.IPv4(127, 0, 0, 1))
	dst := g.LocalAddr().(*net.UDPAddr)
	const senders, each = 3, 50
	for s := range senders {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for i := range each {
			if _, err := c.WriteToUDP([]byte{byte(s), byte(i)}, dst); err != nil {
				t.Fatal(err)
			}
		}
	}
	got := readPackets(t, g, 8, senders*each)
	next := make([]int, senders)
	for _, p := range got {
		if len(p) != 2 {
			t.Fatalf("packet of %d bytes, want 2", len(p))
		}
		s, i := int(p[0]), int(p[1])
		if i != next[s] {
			t.Fatalf("sender %d: packet %d arrived, want %d", s, i, next[s])
		}
		next[s]++
	}
}

func TestCopyControlDropsGRO(t *testing.T) {
	tos := make([]byte, unix.CmsgSpace(1))
	h := (*unix.Cmsghdr)(unsafePointer(tos))
	h.Level, h.Type = unix.IPPROTO_IP, unix.IP_TOS
	h.SetLen(unix.CmsgLen(1))
	tos[unix.CmsgLen(0)] = 2

	gro := make([]byte, unix.CmsgSpace(4))
	h = (*unix.Cmsghdr)(unsafePointer(gro))
	h.Level, h.Type = unix.IPPROTO_UDP, unix.UDP_GRO
	h.SetLen(unix.CmsgLen(4))
	binary.NativeEndian.PutUint32(gro[unix.CmsgLen(0):], 1452)

	src := append(append([]byte(nil), gro...), tos...)
	if got := groSegmentSize(src); got != 1452 {
		t.Fatalf("segment size %d, want 1452", got)
	}
	dst := make([]byte, 128)
	n := copyControl(dst, src)
	if !bytes.Equal(dst[:n], tos) {
		t.Fatalf("copied %x, want only the TOS message %x", dst[:n], tos)
	}
	if n := copyControl(make([]byte, len(tos)-1), src); n != 0 {
		t.Fatalf("copied %d bytes into a slot too small for a whole message", n)
	}
	if got := groSegmentSize(src[:5]); got != 0 {
		t.Fatalf("truncated control data gave segment size %d", got)
	}
}

func unsafePointer(b []byte) unsafe.Pointer { return unsafe.Pointer(&b[0]) }
