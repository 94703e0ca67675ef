//go:build !linux

package quic

import "net"

// withGRO is Linux only; elsewhere quic-go reads the socket itself.
// No ICMP errors are read either (PortClosedSince is always false).
func withGRO(c *net.UDPConn, _ *closedPorts) (net.PacketConn, bool) { return c, false }
