package audit

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"paymentlog/node/audit/audittest"
)

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
	col := audittest.Listen(t, "127.0.0.1:0")
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := Open(path, 1, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.ForwardTo("tcp://"+col.Addr(), ForwardTLS{}); err != nil {
		t.Fatal(err)
	}
	who := Who{Principal: "User:ops", Authenticated: true, Addr: "127.0.0.1:5000"}
	l.Admin(who, "CreateTopic", map[string]string{"Name": "payments"}, nil, ResultOK, "")
	l.Denied(who, "write", "topic", "payments", "TopicAuthorizationFailed", "no")
	l.Access(who, "read", "payments")
	file := fileLines(t, path)
	for i, want := range []int{priInfo, priWarning, priInfo} {
		pri, msg := syslogMsg(t, col.Next(t))
		if pri != want || msg != file[i] {
			t.Fatalf("message %d: pri %d, %q; want pri %d, the file's line %q", i+1, pri, msg, want, file[i])
		}
	}

	// An outage: the collector goes away and comes back on the same port.
	addr := col.Addr()
	col.Stop()
	col2 := audittest.Listen(t, addr)
	var got []string
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; len(got) == 0; i++ {
		if time.Now().After(deadline) {
			t.Fatal("no line reached the collector after its restart")
		}
		l.Admin(who, "DeleteTopic", map[string]int{"N": i}, nil, ResultOK, "")
		select {
		case m := <-col2.Messages():
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
	if err := l.ForwardTo("udp://"+pc.LocalAddr().String(), ForwardTLS{}); err != nil {
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
	f, err := newForwarder("tcp://"+addr, ForwardTLS{}, 2, slog.New(slog.NewTextHandler(io.Discard, nil)))
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
	for _, ok := range []string{"tcp://127.0.0.1:514", "udp://logs.example:514", "tcp://[::1]:6514", "tls://logs.example:6514"} {
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
