package localcluster

import (
	"fmt"
	"io"
	"net"
)

// freePorts returns n distinct free UDP ports (and, with tcp, n free TCP
// ports) on host. All sockets stay open until every port is chosen, so the
// ports are distinct; another process could still take one before a node binds
// it, which Start reports as that node's exit.
func freePorts(host string, n int, tcp bool) (udp, tcpPorts []int, err error) {
	var closers []io.Closer
	defer func() {
		for _, c := range closers {
			c.Close()
		}
	}()
	for range n {
		pc, err := net.ListenPacket("udp", net.JoinHostPort(host, "0"))
		if err != nil {
			return nil, nil, fmt.Errorf("localcluster: free udp port: %w", err)
		}
		closers = append(closers, pc)
		udp = append(udp, pc.LocalAddr().(*net.UDPAddr).Port)
		if tcp {
			ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
			if err != nil {
				return nil, nil, fmt.Errorf("localcluster: free tcp port: %w", err)
			}
			closers = append(closers, ln)
			tcpPorts = append(tcpPorts, ln.Addr().(*net.TCPAddr).Port)
		}
	}
	return udp, tcpPorts, nil
}
