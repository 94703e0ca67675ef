package audit

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// collector is a TCP syslog collector reading octet-counted frames.
type collector struct {
	ln    net.Listener
	msgs  chan string
	mu    sync.Mutex
	conns []net.Conn
}

// stop closes the listener and every connection: the collector is gone.
func (c *collector) stop() {
	c.ln.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, conn := range c.conns {
		conn.Close()
	}
}

func listenCollector(t *testing.T, addr string) *collector {
	t.Helper()
	var ln net.Listener
	var err error
	deadline := time.Now().Add(5 * time.Second)
	for ln, err = net.Listen("tcp", addr); err != nil && time.Now().Before(deadline); ln, err = net.Listen("tcp", addr) {
		time.Sleep(20 * time.Millisecond) // the port of a closed collector, taken again
	}
	if err != nil {
		t.Fatal(err)
	}
	c := &collector{ln: ln, msgs: make(chan string, 100)}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.mu.Lock()
			c.conns = append(c.conns, conn)
			c.mu.Unlock()
			go c.read(conn)
		}
	}()
	t.Cleanup(c.stop)
	return c
}

func (c *collector) read(conn net.Conn) {
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

func (c *collector) next(t *testing.T) string {
	t.Helper()
	select {
	case m := <-c.msgs:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("nothing reached the collector in 10 s")
		return ""
	}
}

// syslogMsg is the MSG part of an RFC 5424 message and its PRI, checking
// the header between.
func syslogMsg(t *testing.T, m string) (pri int, msg string) {
	t.Helper()
	host, _ := os.Hostname()
	var at string
	n, err := fmt.Sscanf(m, "<%d>1 %s ", &pri, &at)
	rest := strings.SplitN(m, " ", 8)
	if err != nil || n != 2 || len(rest) != 8 || rest[2] != host || rest[3] != "paymentlog" || rest[4] != strconv.Itoa(os.Getpid()) ||
		rest[5] != "audit" || rest[6] != "-" {
		t.Fatalf("message %q: not the RFC 5424 header expected (%v)", m, err)
	}
	if _, err := time.Parse(time.RFC3339Nano, at); err != nil {
		t.Fatalf("message %q: timestamp: %v", m, err)
	}
	return pri, rest[7]
}

// Every line written to the file also reaches the collector, byte for
// byte and in order, denied lines at severity warning; after the collector
// comes back from an outage, lines reach it again.
func TestForwardToSyslogOverTCP(t *testing.T) {
	col := listenCollector(t, "127.0.0.1:0")
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := Open(path, 1, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.ForwardTo("tcp://" + col.ln.Addr().String()); err != nil {
		t.Fatal(err)
	}
	who := Who{Principal: "User:ops", Authenticated: true, Addr: "127.0.0.1:5000"}
	l.Admin(who, "CreateTopic", map[string]string{"Name": "payments"}, nil, ResultOK, "")
	l.Denied(who, "write", "topic", "payments", "TopicAuthorizationFailed", "no")
	l.Access(who, "read", "payments")
	file := fileLines(t, path)
	for i, want := range []int{priInfo, priWarning, priInfo} {
		pri, msg := syslogMsg(t, col.next(t))
		if pri != want || msg != file[i] {
			t.Fatalf("message %d: pri %d, %q; want pri %d, the file's line %q", i+1, pri, msg, want, file[i])
		}
	}

	// An outage: the collector goes away and comes back on the same port.
	addr := col.ln.Addr().String()
	col.stop()
	col2 := listenCollector(t, addr)
	var got []string
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; len(got) == 0; i++ {
		if time.Now().After(deadline) {
			t.Fatal("no line reached the collector after its restart")
		}
		l.Admin(who, "DeleteTopic", map[string]int{"N": i}, nil, ResultOK, "")
		select {
		case m := <-col2.msgs:
			_, msg := syslogMsg(t, m)
			got = append(got, msg)
		case <-time.After(100 * time.Millisecond):
		}
	}
	// What arrived is the file's lines, in the file's order.
	file = fileLines(t, path)
	at := slicesIndex(file, got[0])
	if at < 3 {
		t.Fatalf("after the restart the collector got %q, not a line written after the outage", got[0])
	}
	if c := l.Counts(); c.Forwarded < 4 {
		t.Fatalf("counts %+v", c)
	}
}

// UDP: one line a datagram.
func TestForwardToSyslogOverUDP(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := Open(path, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.ForwardTo("udp://" + pc.LocalAddr().String()); err != nil {
		t.Fatal(err)
	}
	l.Started(Who{Principal: "User:node1"}, "v")
	pc.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 1<<16)
	n, _, err := pc.ReadFrom(buf)
	if err != nil {
		t.Fatal(err)
	}
	if _, msg := syslogMsg(t, string(buf[:n])); msg != fileLines(t, path)[0] {
		t.Fatalf("datagram %q; want the file's line", buf[:n])
	}
}

// With the collector unreachable, lines beyond the queue are dropped and
// counted, and Close gives up on the rest after forwardDrain, counting them.
func TestForwardDropsWhenTheQueueIsFull(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nobody listens there
	f, err := newForwarder("tcp://"+addr, 2, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		f.enqueue([]byte(`{"event":"admin"}`), EventAdmin, time.Now())
	}
	if d := f.dropped.Load(); d < 2 || d > 3 {
		t.Fatalf("dropped %d of 5 with a queue of 2; want 2 or 3 (one may be out of the queue, being sent)", d)
	}
	start := time.Now()
	f.close()
	if d, s := f.dropped.Load(), f.sent.Load(); d != 5 || s != 0 {
		t.Fatalf("after close: dropped %d, sent %d; want 5 and 0", d, s)
	}
	if el := time.Since(start); el > forwardDrain+forwardDialTimeout+time.Second {
		t.Fatalf("close took %v", el)
	}
}

func TestParseForwardAddr(t *testing.T) {
	for _, ok := range []string{"tcp://127.0.0.1:514", "udp://logs.example:514", "tcp://[::1]:6514"} {
		if _, _, err := ParseForwardAddr(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "127.0.0.1:514", "http://x:1", "tcp://x", "tcp://x:1/path", "tcp://u@x:1", "unix:///dev/log"} {
		if _, _, err := ParseForwardAddr(bad); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: err %v; want a one-line refusal", bad, err)
		}
	}
}

// fileLines reads path's lines.
func fileLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(bytes.TrimSuffix(b, []byte("\n"))), "\n")
}

func slicesIndex(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}
