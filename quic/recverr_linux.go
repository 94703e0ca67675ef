//go:build linux

package quic

import (
	"net/netip"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The socket's error queue (see closedports.go for why it is read).
//
// With IP_RECVERR on, every ICMP error for a datagram the socket sent is
// queued on its error queue and also left pending on the socket (sk_err):
// the next sendmsg or recvmmsg on the socket, whatever it is for, fails
// with that error once (ECONNREFUSED for a closed port) instead of doing
// its work. quic-go closes a connection on a failed send and the whole
// transport on a failed read, so the raw sender and receiver
// (rawsyscall_linux.go) take such a failure as the pending error it is:
// they read the error queue to its end, which clears the pending error,
// and make the call again. The error queue is read only then; its entries
// are charged to the socket's receive buffer until read.

// recvErrQueue reads one socket's error queue; its buffers are shared by
// the sender's and the receiver's goroutines, one at a time.
type recvErrQueue struct {
	closed *closedPorts
	mu     sync.Mutex
	msg    unix.Msghdr
	name   unix.RawSockaddrInet6 // large enough for either family
	ctrl   [256]byte
}

// enableRecvErr turns on IP_RECVERR (and IPV6_RECVERR on an IPv6 socket,
// whose IPv4-mapped peers' errors come through the IPv4 option) and
// returns the queue reader, or nil if the kernel refuses.
func enableRecvErr(raw syscall.RawConn, inet6 bool, closed *closedPorts) *recvErrQueue {
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_RECVERR, 1)
		if serr == nil && inet6 {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_RECVERR, 1)
		}
	}); err != nil || serr != nil {
		return nil
	}
	return &recvErrQueue{closed: closed}
}

// pendingError reports whether a failed sendmsg or recvmmsg may have
// returned an ICMP error left pending on the socket rather than one of its
// own (icmp_err_convert and the ICMPv6 equivalents, and EMSGSIZE for a
// packet-too-big).
func pendingError(e syscall.Errno) bool {
	switch e {
	case unix.ECONNREFUSED, unix.EHOSTUNREACH, unix.ENETUNREACH, unix.EHOSTDOWN, unix.ENONET,
		unix.ENOPROTOOPT, unix.EOPNOTSUPP, unix.EACCES, unix.EPROTO, unix.EMSGSIZE:
		return true
	}
	return false
}

// pendingRetries bounds the calls made again after a pending error, per
// call: errors arriving faster than that are returned (a send's own
// routing failure, e.g. ENETUNREACH, is returned the same way).
const pendingRetries = 4

// drain reads the error queue on fd to its end (which clears the socket's
// pending error) and records each port-unreachable error; it returns the
// entries read.
func (q *recvErrQueue) drain(fd uintptr) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for {
		q.msg = unix.Msghdr{Name: (*byte)(unsafe.Pointer(&q.name)), Namelen: unix.SizeofSockaddrInet6, Control: &q.ctrl[0]}
		q.msg.SetControllen(len(q.ctrl))
		_, _, e := unix.RawSyscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&q.msg)), unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT)
		if e == unix.EINTR {
			continue
		}
		if e != 0 { // EAGAIN: the queue is empty
			return n
		}
		n++
		if dst, ok := portUnreachable(q.ctrl[:q.msg.Controllen], &q.name); ok {
			q.closed.record(dst, time.Now())
		}
	}
}

// portUnreachable parses one error-queue entry: its control message and
// the destination of the datagram that drew it. ok is false for anything
// but an ICMP or ICMPv6 port unreachable.
func portUnreachable(ctrl []byte, name *unix.RawSockaddrInet6) (netip.AddrPort, bool) {
	// ParseOneSocketControlMessage reads a whole header before it checks
	// the length.
	for len(ctrl) >= unix.SizeofCmsghdr {
		h, body, rest, err := unix.ParseOneSocketControlMessage(ctrl)
		if err != nil {
			return netip.AddrPort{}, false
		}
		ctrl = rest
		if !(h.Level == unix.IPPROTO_IP && h.Type == unix.IP_RECVERR) && !(h.Level == unix.IPPROTO_IPV6 && h.Type == unix.IPV6_RECVERR) {
			continue
		}
		// struct sock_extended_err: errno (4 bytes), origin, type, code,
		// pad, info (4), data (4); the offender's address follows.
		if len(body) < 8 {
			return netip.AddrPort{}, false
		}
		origin, typ, code := body[4], body[5], body[6]
		icmp := origin == unix.SO_EE_ORIGIN_ICMP && typ == 3 && code == 3 // destination unreachable: port
		icmp6 := origin == unix.SO_EE_ORIGIN_ICMP6 && typ == 1 && code == 4
		if !icmp && !icmp6 {
			return netip.AddrPort{}, false
		}
		return sockaddrAddrPort(name)
	}
	return netip.AddrPort{}, false
}

// sockaddrAddrPort reads an IPv4 or IPv6 sockaddr (port in network order).
func sockaddrAddrPort(sa *unix.RawSockaddrInet6) (netip.AddrPort, bool) {
	switch sa.Family {
	case unix.AF_INET:
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		return netip.AddrPortFrom(netip.AddrFrom4(sa4.Addr), port(&sa4.Port)), true
	case unix.AF_INET6:
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), port(&sa.Port)), true
	}
	return netip.AddrPort{}, false
}
