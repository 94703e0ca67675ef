//go:build linux

package quic

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// The socket's system calls without the scheduler's hand-off.
//
// A goroutine entering a system call through package syscall tells the Go
// scheduler it may block; when the call takes longer than sysmon's tick
// (20 µs) the scheduler gives its P to another thread, and the calling
// thread, back from the kernel, has to queue the goroutine and sleep until
// a P is free again. On a virtual machine where a thread wakeup costs tens
// of µs, and with a node's GOMAXPROCS at its share of the CPUs (often 1),
// that hand-off costs more than the call: a sendmsg of a GSO train on
// loopback runs the receiver's network stack inline (~50 µs here), and a
// recvmmsg of eight 64 KiB trains copies half a MiB. Neither can block: the
// socket is non-blocking, and EAGAIN waits in the netpoller as before
// (syscall.RawConn's Read and Write). So groConn makes both with
// RawSyscall. At full load this halved the context switches of the nodes
// and the bench and cut their CPU per produce request (README,
// Transport).

// rawSender sends datagrams with a raw sendmsg.
type rawSender struct {
	raw   syscall.RawConn
	inet6 bool // the socket is AF_INET6 (IPv4 peers as v4-mapped addresses)
	local net.Addr
	// errq, when set, reads the error queue after a send failed with an
	// error that may be an ICMP error pending on the socket (recverr_linux.go).
	errq  *recvErrQueue
	sends atomic.Uint64 // sendmsg calls made (tests check that quic-go sends through here)
	// drops counts the datagrams (single ones or GSO trains) the host
	// dropped on their way out (ENOBUFS, see sendCall.send).
	drops atomic.Uint64
}

func newRawSender(c *net.UDPConn) (*rawSender, bool) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, false
	}
	var sa unix.Sockaddr
	var serr error
	if err := raw.Control(func(fd uintptr) { sa, serr = unix.Getsockname(int(fd)) }); err != nil || serr != nil {
		return nil, false
	}
	s := &rawSender{raw: raw, local: c.LocalAddr()}
	switch sa.(type) {
	case *unix.SockaddrInet4:
	case *unix.SockaddrInet6:
		s.inet6 = true
	default:
		return nil, false
	}
	return s, true
}

// sendCall is one sendmsg's arguments, pooled: the kernel reads them by
// address, so they live on the heap, and a call allocates nothing.
type sendCall struct {
	msg     unix.Msghdr
	sa4     unix.RawSockaddrInet4
	sa6     unix.RawSockaddrInet6
	iov     unix.Iovec
	n       int
	errno   syscall.Errno
	dropped bool                  // the host dropped the datagram (ENOBUFS)
	errq    *recvErrQueue         // the sender's, for this call
	fn      func(fd uintptr) bool // c.send, bound once
}

var sendCalls = sync.Pool{New: func() any {
	c := &sendCall{}
	c.fn = c.send
	return c
}}

// send is syscall.RawConn.Write's callback: false (wait until writable) on
// EAGAIN. An error that may be an ICMP error left pending on the socket
// (for any datagram it sent before) empties the error queue and sends
// again.
//
// ENOBUFS is a datagram the host dropped on its way out: a qdisc or device
// queue was full, or a tc filter dropped it. Without IP_RECVERR the kernel
// reports such a send as made (and counts it in Udp SndbufErrors); with it
// on (recverr_linux.go) the call fails, and quic-go closes the connection
// on any failed send but EMSGSIZE, so one full queue on a busy or shaped
// link took down every stream of the connection (raft's, fetch sessions,
// calls in flight). It is a lost packet like one lost on the wire: send
// reports it sent, and quic-go's loss recovery sends its frames again.
func (c *sendCall) send(fd uintptr) bool {
	retries := 0
	for {
		r, _, e := unix.RawSyscall(unix.SYS_SENDMSG, fd, uintptr(unsafe.Pointer(&c.msg)), 0)
		switch e {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		case unix.ENOBUFS:
			c.n, c.errno, c.dropped = int(c.iov.Len), 0, true
			return true
		}
		if e != 0 && c.errq != nil && pendingError(e) && retries < pendingRetries {
			retries++
			c.errq.drain(fd)
			continue
		}
		c.n, c.errno = int(r), e
		return true
	}
}

// writeMsgUDP is net.UDPConn.WriteMsgUDP without the scheduler's
// system-call hand-off.
func (s *rawSender) writeMsgUDP(b, oob []byte, addr *net.UDPAddr) (n, oobn int, err error) {
	c := sendCalls.Get().(*sendCall)
	defer func() {
		c.msg, c.iov, c.n, c.errno, c.dropped, c.errq = unix.Msghdr{}, unix.Iovec{}, 0, 0, false, nil // keep no caller's buffer
		sendCalls.Put(c)
	}()
	c.errq = s.errq
	ip4 := addr.IP.To4()
	switch {
	case !s.inet6 && ip4 != nil:
		c.sa4 = unix.RawSockaddrInet4{Family: unix.AF_INET}
		putPort(&c.sa4.Port, addr.Port)
		copy(c.sa4.Addr[:], ip4)
		c.msg.Name = (*byte)(unsafe.Pointer(&c.sa4))
		c.msg.Namelen = unix.SizeofSockaddrInet4
	case s.inet6 && len(addr.IP) > 0:
		c.sa6 = unix.RawSockaddrInet6{Family: unix.AF_INET6, Scope_id: zoneIndex(addr.Zone)}
		putPort(&c.sa6.Port, addr.Port)
		copy(c.sa6.Addr[:], addr.IP.To16())
		c.msg.Name = (*byte)(unsafe.Pointer(&c.sa6))
		c.msg.Namelen = unix.SizeofSockaddrInet6
	default:
		return 0, 0, &net.OpError{Op: "write", Net: "udp", Source: s.local, Addr: addr, Err: os.NewSyscallError("sendmsg", unix.EAFNOSUPPORT)}
	}
	if len(b) > 0 {
		c.iov.Base = &b[0]
		c.iov.SetLen(len(b))
	}
	c.msg.Iov = &c.iov
	c.msg.Iovlen = 1
	if len(oob) > 0 {
		c.msg.Control = &oob[0]
		c.msg.SetControllen(len(oob))
	}
	werr := s.raw.Write(c.fn)
	s.sends.Add(1)
	if c.dropped {
		s.drops.Add(1)
	}
	if werr == nil && c.errno != 0 {
		werr = os.NewSyscallError("sendmsg", c.errno)
	}
	if werr != nil {
		return 0, 0, &net.OpError{Op: "write", Net: "udp", Source: s.local, Addr: addr, Err: werr}
	}
	return c.n, len(oob), nil
}

// zoneIndex is the interface index of an IPv6 zone (a name or a number).
func zoneIndex(zone string) uint32 {
	if zone == "" {
		return 0
	}
	if ifi, err := net.InterfaceByName(zone); err == nil {
		return uint32(ifi.Index)
	}
	if n, err := strconv.ParseUint(zone, 10, 32); err == nil {
		return uint32(n)
	}
	return 0
}

// putPort stores a port in network byte order, as a sockaddr holds it.
func putPort(dst *uint16, port int) {
	b := (*[2]byte)(unsafe.Pointer(dst))
	b[0], b[1] = byte(port>>8), byte(port)
}

// port reads a sockaddr's port, stored in network byte order.
func port(src *uint16) uint16 {
	b := (*[2]byte)(unsafe.Pointer(src))
	return uint16(b[0])<<8 | uint16(b[1])
}

// mmsghdr is struct mmsghdr of recvmmsg(2).
type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32
}

// rawReceiver reads trains with a raw recvmmsg into a groConn's messages,
// without the scheduler's system-call hand-off.
type rawReceiver struct {
	raw   syscall.RawConn
	local net.Addr
	hdrs  []mmsghdr
	iovs  []unix.Iovec
	names []unix.RawSockaddrInet6 // large enough for either family
	// addrs caches the peer address objects by address, so that a read
	// allocates nothing for a peer seen before.
	addrs map[peerKey]*net.UDPAddr
	reads atomic.Uint64 // recvmmsg calls that returned packets (tests look at it)
	// errq: as rawSender's; a pending error never reaches quic-go, which
	// would close the transport on it.
	errq *recvErrQueue
	// pollErrs counts the reads the poller failed after an ICMP error
	// alone woke it (pollEventErr; tests look at it).
	pollErrs atomic.Uint64
}

// maxPollErrWait bounds a wait for a datagram past the poller, between
// reads the poller fails.
const maxPollErrWait = 20 * time.Millisecond

// waitReadable waits up to d for fd to have a datagram or an error (poll
// with POLLIN), and reports whether it has one. A blocking system call the
// scheduler's way: it is made only after the poller failed a read.
func waitReadable(fd uintptr, d time.Duration) bool {
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(pfd, int(d/time.Millisecond))
		if err == unix.EINTR {
			continue
		}
		return err == nil && n > 0
	}
}

// pollEventErr reports whether err is the Go poller's "not pollable"
// (internal/poll.ErrNotPollable, not exported). When an epoll wakeup for
// the socket carries EPOLLERR and nothing else (an ICMP error queued while
// no datagram waits and the send buffer is more than half full), the
// runtime marks the descriptor (netpoll_epoll.go, setEventErr) and fails
// every read on it with that error until its next event; quic-go would
// close the transport on it.
func pollEventErr(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) {
		err = op.Err
	}
	return err != nil && err.Error() == "not pollable"
}

// maxCachedPeers bounds rawReceiver.addrs (it starts over when full).
const maxCachedPeers = 256

func newRawReceiver(c *net.UDPConn, msgs []ipv4.Message) (*rawReceiver, bool) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, false
	}
	r := &rawReceiver{raw: raw, local: c.LocalAddr(), hdrs: make([]mmsghdr, len(msgs)), iovs: make([]unix.Iovec, len(msgs)),
		names: make([]unix.RawSockaddrInet6, len(msgs)), addrs: make(map[peerKey]*net.UDPAddr)}
	for i := range msgs {
		r.iovs[i].Base = &msgs[i].Buffers[0][0]
		r.iovs[i].SetLen(len(msgs[i].Buffers[0]))
		h := &r.hdrs[i].hdr
		h.Iov = &r.iovs[i]
		h.Iovlen = 1
		h.Control = &msgs[i].OOB[0]
	}
	return r, true
}

// read fills msgs (the ones given to newRawReceiver) like
// ipv4.PacketConn.ReadBatch.
func (r *rawReceiver) read(msgs []ipv4.Message) (int, error) {
	for i := range r.hdrs {
		h := &r.hdrs[i].hdr
		h.Name = (*byte)(unsafe.Pointer(&r.names[i]))
		h.Namelen = unix.SizeofSockaddrInet6
		h.SetControllen(len(msgs[i].OOB))
		h.Flags = 0
	}
	var n int
	var errno syscall.Errno
	read := func(fd uintptr) bool {
		retries := 0
		for {
			m, _, e := unix.RawSyscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&r.hdrs[0])), uintptr(len(r.hdrs)), 0, 0, 0)
			switch e {
			case unix.EINTR:
				continue
			case unix.EAGAIN:
				return false
			}
			if e != 0 && r.errq != nil && pendingError(e) {
				r.errq.drain(fd)
				if retries++; retries > pendingRetries {
					// Errors arriving faster than they are read: wait
					// for the next datagram's wakeup rather than fail.
					return false
				}
				continue
			}
			n, errno = int(m), e
			return true
		}
	}
	err := r.raw.Read(read)
	for err != nil && r.errq != nil && pollEventErr(err) {
		// An ICMP error alone woke the poller, which now fails every read
		// until the socket's next event reaches it. Read the error queue,
		// then the socket itself, past the poller: what is there, or
		// what arrives within maxPollErrWait (poll(2) wakes at once).
		r.pollErrs.Add(1)
		got := false
		cerr := r.raw.Control(func(fd uintptr) {
			r.errq.drain(fd)
			if got = read(fd); !got && waitReadable(fd, maxPollErrWait) {
				got = read(fd)
			}
		})
		switch {
		case cerr != nil: // closed
			err = cerr
		case got:
			err = nil
		default:
			err = r.raw.Read(read)
		}
	}
	if err == nil && errno != 0 {
		err = os.NewSyscallError("recvmmsg", errno)
	}
	if err != nil {
		return 0, &net.OpError{Op: "read", Net: "udp", Source: r.local, Err: err}
	}
	r.reads.Add(1)
	for i := range n {
		h := &r.hdrs[i]
		m := &msgs[i]
		m.N = int(h.n)
		m.NN = int(h.hdr.Controllen)
		m.Flags = int(h.hdr.Flags)
		m.Addr = r.addr(&r.names[i])
	}
	return n, nil
}

// peerKey is a sender's address as the kernel gave it.
type peerKey struct {
	ip    [16]byte
	port  uint16
	scope uint32
	v4    bool
}

// addr returns the sender's address, from the cache when seen before.
func (r *rawReceiver) addr(sa *unix.RawSockaddrInet6) net.Addr {
	var k peerKey
	switch sa.Family {
	case unix.AF_INET:
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		k = peerKey{port: port(&sa4.Port), v4: true}
		copy(k.ip[:], sa4.Addr[:])
	case unix.AF_INET6:
		k = peerKey{ip: sa.Addr, port: port(&sa.Port), scope: sa.Scope_id}
	default:
		return nil
	}
	if u, ok := r.addrs[k]; ok {
		return u
	}
	var a netip.Addr
	if k.v4 {
		a = netip.AddrFrom4([4]byte(k.ip[:4]))
	} else {
		a = netip.AddrFrom16(k.ip)
		if k.scope != 0 {
			if ifi, err := net.InterfaceByIndex(int(k.scope)); err == nil {
				a = a.WithZone(ifi.Name)
			} else {
				a = a.WithZone(strconv.FormatUint(uint64(k.scope), 10))
			}
		}
	}
	if len(r.addrs) >= maxCachedPeers {
		clear(r.addrs)
	}
	u := net.UDPAddrFromAddrPort(netip.AddrPortFrom(a, k.port))
	r.addrs[k] = u
	return u
}
