package localcluster

import (
	"fmt"
	"io"
	"net"

	"paymentlog/internal/freeport"
)

// freePorts returns n distinct free UDP ports (and, with tcp, n free TCP
// ports) on host. All sockets stay open until every port is chosen, so the
// ports are distinct; another process could still take one before a node binds
// it, which Start reports as that node's exit. The ports come from below the
// kernel's ephemeral range (freeport.Bind), so no socket bound to port 0
// meanwhile takes one.
func freePorts(host string, n int, tcp bool) (udp, tcpPorts []int, err error) {
	var closers []io.Closer
	defer func() {
		for _, c := range closers {
			c.Close()
		}
	}()
	for range n {
		pc, port, err := freeport.Bind(func(p int) (io.Closer, error) {
			return net.ListenPacket("udp", net.JoinHostPort(host, fmt.Sprint(p)))
		})
		if err != nil {
			return nil, nil, fmt.Errorf("localcluster: free udp port: %w", err)
		}
		closers = append(closers, pc)
		udp = append(udp, port)
		if tcp {
			ln, port, err := freeport.Bind(func(p int) (io.Closer, error) {
				return net.Listen("tcp", net.JoinHostPort(host, fmt.Sprint(p)))
			})
			if err != nil {
				return nil, nil, fmt.Errorf("localcluster: free tcp port: %w", err)
			}
			closers = append(closers, ln)
			tcpPorts = append(tcpPorts, port)
		}
	}
	return udp, tcpPorts, nil
}
