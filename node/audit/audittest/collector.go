// Package audittest is a syslog collector for tests of the audit trail's
// forwarding (node/audit's forward.go): it accepts TCP connections, or TLS
// ones (ListenTLS, RFC 5425), and reads octet-counted RFC 6587 frames.
package audittest

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Collector is a TCP syslog collector.
type Collector struct {
	ln    net.Listener
	msgs  chan string
	mu    sync.Mutex
	conns []net.Conn
}

// Listen starts a collector on addr ("127.0.0.1:0" for any port), retrying
// for a few seconds while the port of a stopped collector is taken again.
// It stops at the end of the test.
func Listen(t testing.TB, addr string) *Collector {
	t.Helper()
	return ListenTLS(t, addr, nil)
}

// ListenTLS is Listen over TLS with cfg (nil: plain TCP).
func ListenTLS(t testing.TB, addr string, cfg *tls.Config) *Collector {
	t.Helper()
	var ln net.Listener
	var err error
	deadline := time.Now().Add(5 * time.Second)
	for ln, err = net.Listen("tcp", addr); err != nil && time.Now().Before(deadline); ln, err = net.Listen("tcp", addr) {
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	if cfg != nil {
		ln = tls.NewListener(ln, cfg)
	}
	c := &Collector{ln: ln, msgs: make(chan string, 1000)}
	go c.accept()
	t.Cleanup(c.Stop)
	return c
}

// Addr is the collector's host:port.
func (c *Collector) Addr() string { return c.ln.Addr().String() }

// Stop closes the listener and every connection: the collector is gone.
func (c *Collector) Stop() {
	c.ln.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, conn := range c.conns {
		conn.Close()
	}
}

// Next returns the next message, failing the test after 10 s without one.
func (c *Collector) Next(t testing.TB) string {
	t.Helper()
	select {
	case m := <-c.msgs:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("nothing reached the syslog collector in 10 s")
		return ""
	}
}

// Messages is the channel of messages received, for a test that polls.
func (c *Collector) Messages() <-chan string { return c.msgs }

func (c *Collector) accept() {
	for {
		conn, err := c.ln.Accept()
		if err != nil {
			return
		}
		c.mu.Lock()
		c.conns = append(c.conns, conn)
		c.mu.Unlock()
		go c.read(conn)
	}
}

func (c *Collector) read(conn net.Conn) {
	defer conn.Close()
	r := bufio.NewReader(conn)
	for {
		n, err := r.ReadString(' ')
		if err != nil {
			return
		}
		size, err := strconv.Atoi(strings.TrimSuffix(n, " "))
		if err != nil {
			return
		}
		msg := make([]byte, size)
		if _, err := io.ReadFull(r, msg); err != nil {
			return
		}
		c.msgs <- string(msg)
	}
}
