//go:build linux

package quic

import (
	"encoding/binary"
	"net"
	"runtime"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// Receive offload (UDP_GRO).
//
// quic-go v0.65 sends with GSO: one sendmsg carries a train of up to 64 KiB
// of equal-size QUIC packets. It reads with recvmmsg into 1452-byte slots,
// one datagram per slot, so the kernel has to cut every train back into
// single datagrams on the receiving socket (on loopback that is the whole
// cost of delivery). With UDP_GRO set, the kernel queues the train as one
// buffer and names its segment size in a control message; groConn reads
// trains into large buffers and splits them into packets in user space.
//
// quic-go offers the hook: a PacketConn that implements ReadBatch is used
// for reading instead of wrapping the socket itself, and the rest (GSO
// sends, ECN, DF, buffer sizes) still goes to the embedded *net.UDPConn.
// A side effect the benchmark shows: quic-go processes up to 32 received
// packets before it sends, so a train read at once draws one ACK instead of
// one per two packets.

const (
	groTrains   = 8       // trains read per recvmmsg
	groTrainBuf = 1 << 16 // the largest UDP payload fits
	groOOBBuf   = 256
)

// groConn is a UDP socket with UDP_GRO on, read train by train.
type groConn struct {
	*net.UDPConn
	pc *ipv4.PacketConn

	// Read state, owned by quic-go's single reading goroutine.
	msgs []ipv4.Message
	next int // msgs[next:n] hold data not yet handed out
	n    int
	off  int // bytes of msgs[next] already handed out
	seg  int // segment size of msgs[next] (0: one datagram)
	oob  []byte
	oobN int // msgs[next]'s control messages for quic-go (oob[:oobN])

	trains uint64 // coalesced reads so far (tests look at it)
	// handed counts the packets handed out since the reader last yielded
	// (see yieldEvery).
	handed int

	// send and recv make the system calls without the Go scheduler's
	// hand-off (see rawsyscall_linux.go); nil: the embedded socket's
	// WriteMsgUDP, and ipv4.PacketConn's ReadBatch.
	send *rawSender
	recv *rawReceiver
}

// WriteMsgUDP is what quic-go sends every packet and GSO train with.
func (g *groConn) WriteMsgUDP(b, oob []byte, addr *net.UDPAddr) (n, oobn int, err error) {
	if g.send == nil {
		return g.UDPConn.WriteMsgUDP(b, oob, addr)
	}
	return g.send.writeMsgUDP(b, oob, addr)
}

// sendDrops counts the datagrams the host dropped on their way out
// (rawSender.drops; Stats).
func (g *groConn) sendDrops() uint64 {
	if g.send == nil {
		return 0
	}
	return g.send.drops.Load()
}

// pollErrorReads counts the reads the poller failed after an ICMP error
// alone woke it (rawReceiver.pollErrs; Stats).
func (g *groConn) pollErrorReads() uint64 {
	if g.recv == nil {
		return 0
	}
	return g.recv.pollErrs.Load()
}

// withGRO turns on UDP_GRO and returns the socket wrapped for quic-go, or
// the socket itself when the kernel refuses (older than 5.0). With the raw
// sender and receiver in place it also reads ICMP errors into closed
// (recverr_linux.go).
func withGRO(c *net.UDPConn, closed *closedPorts) (net.PacketConn, bool) {
	raw, err := c.SyscallConn()
	if err != nil {
		return c, false
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_GRO, 1)
	}); err != nil || serr != nil {
		return c, false
	}
	g := &groConn{UDPConn: c, pc: ipv4.NewPacketConn(c), msgs: make([]ipv4.Message, groTrains), oob: make([]byte, groOOBBuf)}
	g.send, _ = newRawSender(c)
	for i := range g.msgs {
		g.msgs[i].Buffers = [][]byte{make([]byte, groTrainBuf)}
		g.msgs[i].OOB = make([]byte, groOOBBuf)
	}
	g.recv, _ = newRawReceiver(c, g.msgs)
	// Only both raw paths absorb an ICMP error left pending on the socket.
	if g.send != nil && g.recv != nil && closed != nil {
		if q := enableRecvErr(g.recv.raw, g.send.inet6, closed); q != nil {
			g.send.errq, g.recv.errq = q, q
		}
	}
	return g, true
}

// ReadBatch fills ms with single packets: what is left of the trains read
// last time, or else the trains of one recvmmsg. A packet longer than its
// slot is truncated (quic-go then fails to decrypt it and drops it).
func (g *groConn) ReadBatch(ms []ipv4.Message, flags int) (int, error) {
	if g.handed >= yieldEvery {
		g.handed = 0
		runtime.Gosched()
	}
	if g.next >= g.n {
		var n int
		var err error
		if g.recv != nil {
			n, err = g.recv.read(g.msgs)
		} else {
			n, err = g.pc.ReadBatch(g.msgs, flags)
		}
		if n <= 0 || err != nil {
			return 0, err
		}
		g.next, g.n, g.off = 0, n, 0
		g.startTrain()
	}
	out := 0
	for out < len(ms) && g.next < g.n {
		m := &g.msgs[g.next]
		data := m.Buffers[0][:m.N]
		size := len(data) - g.off
		if g.seg > 0 && g.seg < size {
			size = g.seg
		}
		d := &ms[out]
		d.N = copy(d.Buffers[0], data[g.off:g.off+size])
		if g.oobN <= len(d.OOB) {
			d.NN = copy(d.OOB, g.oob[:g.oobN])
		} else { // whole messages only, never a cut one
			d.NN = copyControl(d.OOB, g.oob[:g.oobN])
		}
		d.Flags = m.Flags
		d.Addr = m.Addr
		out++
		g.off += size
		if g.off >= len(data) {
			g.next++
			g.off = 0
			if g.next < g.n {
				g.startTrain()
			}
		}
	}
	g.handed += out
	return out, nil
}

// yieldEvery is how many packets the reading goroutine hands to quic-go
// before it yields the P once. quic-go's reader queues each packet to its
// connection and drops it when 256 already wait there (no kernel counter
// sees that); it reads on while the socket has data, so at GOMAXPROCS 1 a
// connection's goroutine could not run to drain its queue until the socket
// was empty, and one recvmmsg of eight 64 KiB trains holds ~360 packets.
// A dropped packet at the end of a burst is found lost only by the probe
// timeout (25 ms and more), and every loss shrinks the congestion window.
// Yielding lets the goroutines woken by the queued packets run first.
// TestBurstsAreNotDroppedAtOneP: 261-274 of 48 000 packets declared lost
// without the yield, 3-16 yielding every 128, none every 64 or 32. In
// paymentlog bench at the half load, yielding every 32 cost ~6% more CPU
// per produce request and a longer tail; every 64 cost nothing measurable.
const yieldEvery = 64

// startTrain reads msgs[next]'s control messages once for all its packets.
func (g *groConn) startTrain() {
	m := &g.msgs[g.next]
	g.seg = groSegmentSize(m.OOB[:m.NN])
	if g.seg > 0 && g.seg < m.N {
		g.trains++
	}
	g.oobN = copyControl(g.oob, m.OOB[:m.NN])
}

// groSegmentSize returns the segment size of a coalesced read from its
// control messages, or 0 when the read is a single datagram.
func groSegmentSize(oob []byte) int {
	for len(oob) >= unix.SizeofCmsghdr { // the parser reads a whole header first
		h, body, rest, err := unix.ParseOneSocketControlMessage(oob)
		if err != nil {
			return 0
		}
		if h.Level == unix.IPPROTO_UDP && h.Type == unix.UDP_GRO && len(body) >= 2 {
			if len(body) >= 4 {
				return int(binary.NativeEndian.Uint32(body))
			}
			return int(binary.NativeEndian.Uint16(body))
		}
		oob = rest
	}
	return 0
}

// copyControl copies the control messages quic-go reads (IP level: TOS,
// packet info) from src to dst, whole messages only, and returns the bytes
// written. The UDP_GRO message stays behind: it describes the train, not
// the packet.
func copyControl(dst, src []byte) int {
	n := 0
	for len(src) >= unix.SizeofCmsghdr {
		h, _, rest, err := unix.ParseOneSocketControlMessage(src)
		if err != nil {
			break
		}
		one := src[:len(src)-len(rest)]
		if h.Level != unix.IPPROTO_UDP && n+len(one) <= len(dst) {
			n += copy(dst[n:], one)
		}
		src = rest
	}
	return n
}
