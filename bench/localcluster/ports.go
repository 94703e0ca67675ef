package localcluster

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
)

// Ports are picked below Linux's default ephemeral range (32768-60999),
// from which the kernel draws the port of every socket bound to port 0
// (each QUIC dial, of this bench or of anything else on the machine): a
// port found by binding port 0 and closing the socket could be handed to
// such a socket before the node binds it.
const (
	portLow  = 20000 // ports are searched in [portLow, portLow+portSpan)
	portSpan = 12000
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
		pc, port, err := bindFree(func(p int) (io.Closer, error) {
			return net.ListenPacket("udp", net.JoinHostPort(host, fmt.Sprint(p)))
		})
		if err != nil {
			return nil, nil, fmt.Errorf("localcluster: free udp port: %w", err)
		}
		closers = append(closers, pc)
		udp = append(udp, port)
		if tcp {
			ln, port, err := bindFree(func(p int) (io.Closer, error) {
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

// bindFree binds random ports of the range with bind until one succeeds
// (100 tries).
func bindFree(bind func(port int) (io.Closer, error)) (io.Closer, int, error) {
	var last error
	for range 100 {
		p := portLow + rand.IntN(portSpan)
		c, err := bind(p)
		if err == nil {
			return c, p, nil
		}
		last = err
	}
	return nil, 0, fmt.Errorf("no free port in [%d, %d): %w", portLow, portLow+portSpan, last)
}
