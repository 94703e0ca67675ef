package audit

import (
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// A client's read or write of a topic is recorded the first time, per
// principal, address and topic, and again once the interval has passed;
// interval 0 records none.
func TestAccessLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := Open(path, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	at := time.Unix(1_800_000_000, 0)
	l.now = func() time.Time { return at }
	if !l.RecordsAccess() {
		t.Fatal("access lines off by default")
	}
	app := Who{Principal: "User:app", Authenticated: true, Addr: "127.0.0.1:5000"}
	for range 10 {
		l.Access(app, "write", "payments")
	}
	l.Access(app, "read", "payments")                                                 // another op
	l.Access(app, "write", "refunds")                                                 // another topic
	l.Access(Who{Principal: "User:app", Addr: "127.0.0.1:5001"}, "write", "payments") // another connection
	l.Access(Who{Principal: "User:ops", Addr: "127.0.0.1:5000"}, "write", "payments") // another principal
	at = at.Add(DefaultAccessInterval - time.Second)
	l.Access(app, "write", "payments") // within the interval
	at = at.Add(time.Second)
	l.Access(app, "write", "payments") // the interval has passed
	l.SetAccessInterval(0)
	l.Access(app, "write", "audit-off")

	lines := readLines(t, path)
	want := []struct{ principal, addr, op, topic string }{
		{"User:app", "127.0.0.1:5000", "write", "payments"},
		{"User:app", "127.0.0.1:5000", "read", "payments"},
		{"User:app", "127.0.0.1:5000", "write", "refunds"},
		{"User:app", "127.0.0.1:5001", "write", "payments"},
		{"User:ops", "127.0.0.1:5000", "write", "payments"},
		{"User:app", "127.0.0.1:5000", "write", "payments"},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d: %v", len(lines), len(want), lines)
	}
	for i, w := range want {
		l := lines[i]
		if l["event"] != EventAccess || l["principal"] != w.principal || l["addr"] != w.addr || l["op"] != w.op ||
			l["resource"] != ResourceTopic || l["resource_name"] != w.topic || l["result"] != ResultOK || l["node"] != float64(2) {
			t.Fatalf("line %d: %v; want %+v", i+1, l, w)
		}
	}
	if l.RecordsAccess() {
		t.Fatal("access lines on after SetAccessInterval(0)")
	}
}

// Past maxAccessKeys remembered accesses, the expired ones are forgotten;
// if none has expired, all are, so lines come sooner, never fewer.
func TestAccessMemoryIsBounded(t *testing.T) {
	a := accessSeen{interval: time.Hour}
	at := time.Unix(1_800_000_000, 0)
	key := func(i int) accessKey {
		return accessKey{principal: "User:app", addr: "a", op: "read", topic: strconv.Itoa(i)}
	}
	for i := range maxAccessKeys / 2 {
		if !a.due(key(i), at) {
			t.Fatalf("access %d not due the first time", i)
		}
	}
	at = at.Add(time.Hour)
	for i := maxAccessKeys / 2; i < maxAccessKeys; i++ {
		a.due(key(i), at)
	}
	if len(a.last) != maxAccessKeys {
		t.Fatalf("%d remembered, want %d", len(a.last), maxAccessKeys)
	}
	a.due(key(maxAccessKeys), at) // full: the first half has expired
	if len(a.last) != maxAccessKeys/2+1 {
		t.Fatalf("%d remembered after the sweep, want %d", len(a.last), maxAccessKeys/2+1)
	}
	if a.due(key(maxAccessKeys-1), at) {
		t.Fatal("an access of the second half, not expired, was forgotten")
	}
	for i := maxAccessKeys + 1; len(a.last) < maxAccessKeys; i++ {
		a.due(key(i), at)
	}
	a.due(key(2*maxAccessKeys), at) // full, nothing expired: all forgotten
	if len(a.last) != 1 || !a.due(key(maxAccessKeys-1), at) {
		t.Fatalf("%d remembered; want only the newest", len(a.last))
	}
}

// BenchmarkAccessAlreadyRecorded is what every Produce and Fetch pays once
// its access is recorded: the check that it is not due yet.
func BenchmarkAccessAlreadyRecorded(b *testing.B) {
	l, err := Open("", 1, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	who := Who{Principal: "User:checkout-service", Authenticated: true, Addr: "10.0.3.7:51022"}
	l.Access(who, "write", "payments")
	b.ReportAllocs()
	for b.Loop() {
		l.Access(who, "write", "payments")
	}
}
