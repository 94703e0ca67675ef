package quic

import (
	"net"
	"syscall"
)

// setUDPBuffers sets both socket buffers to at least size (forcing past the
// sysctl limits when privileged) and returns what the kernel granted (Linux
// reports twice the requested value for bookkeeping overhead).
func setUDPBuffers(c *net.UDPConn, size int) (rcv, snd int) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, 0
	}
	_ = raw.Control(func(fd uintptr) {
		rcv = adjust(int(fd), syscall.SO_RCVBUF, syscall.SO_RCVBUFFORCE, size)
		snd = adjust(int(fd), syscall.SO_SNDBUF, syscall.SO_SNDBUFFORCE, size)
	})
	return rcv, snd
}

func adjust(fd, opt, forceOpt, size int) int {
	cur, _ := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, opt)
	if cur >= size {
		return cur
	}
	_ = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, opt, size)
	if cur, _ = syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, opt); cur >= size {
		return cur
	}
	_ = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, forceOpt, size)
	cur, _ = syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, opt)
	return cur
}
