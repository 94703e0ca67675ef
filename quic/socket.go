package quic

import (
	"fmt"
	"log/slog"
	"net"
)

// listenUDP binds the UDP socket of an endpoint: 7 MiB buffers (forced when
// privileged), receive offload where the kernel has it, and the ICMP errors
// its datagrams draw recorded in closed (closedports.go). pc is what
// quic-go reads and writes; closing udp closes both.
func listenUDP(addr string, closed *closedPorts, log *slog.Logger) (udp *net.UDPConn, pc net.PacketConn, gro bool, err error) {
	laddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, nil, false, fmt.Errorf("quic: listen address %q: %w", addr, err)
	}
	udp, err = net.ListenUDP("udp", laddr)
	if err != nil {
		return nil, nil, false, fmt.Errorf("quic: listen %s: %w", addr, err)
	}
	tuneUDPBuffers(udp, log)
	pc, gro = withGRO(udp, closed)
	return udp, pc, gro, nil
}

// ListenPacket opens a UDP socket set up exactly as an Endpoint's, for a
// bare quic-go Transport. The benchmark's raw-QUIC baseline uses it so that
// the baseline and the nodes share one socket setup. gro reports whether
// receive offload is on.
func ListenPacket(addr string, log *slog.Logger) (pc net.PacketConn, gro bool, err error) {
	if log == nil {
		log = slog.Default()
	}
	_, pc, gro, err = listenUDP(addr, &closedPorts{}, log)
	return pc, gro, err
}
