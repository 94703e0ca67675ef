//go:build !linux

package quic

import "net"

// withGRO is Linux only; elsewhere quic-go reads the socket itself.
func withGRO(c *net.UDPConn) (net.PacketConn, bool) { return c, false }
