package audit

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"
)

// A refused handshake is written once per RefusedRepeatWindow per side,
// peer host, reason, serial and issuer (a new source port is the same
// client); the next line for it counts the attempts left out; other hosts,
// reasons, certificates and sides are written at once.
func TestRefusedConnectLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := Open(path, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	l.now = func() time.Time { return now }
	expired := RefusedHandshake{Side: SideInbound, Reason: "expired", Message: "x509: certificate has expired", Serial: "1f", Issuer: "CN=ca",
		NotBefore: now.Add(-48 * time.Hour), NotAfter: now.Add(-time.Hour)}
	refuse := func(addr string, h RefusedHandshake) {
		l.RefusedConnect(Who{Principal: "User:old", Authenticated: true, Addr: addr}, "cluster", "cluster", h)
	}
	refuse("10.0.0.1:4000", expired) // written
	for i := range 5 {               // the same client on new ports: left out
		now = now.Add(time.Second)
		refuse("10.0.0.1:"+string(rune('1'+i))+"000", expired)
	}
	refuse("10.0.0.2:4000", expired) // another host: written
	other := expired
	other.Serial = "2f"
	refuse("10.0.0.1:4000", other) // another certificate: written
	unknown := expired
	unknown.Reason = "unknown-ca"
	refuse("10.0.0.1:4000", unknown) // another reason: written
	dialed := expired
	dialed.Side, dialed.ServerName = SideOutbound, "10.0.0.1"
	refuse("10.0.0.1:9092", dialed) // the node dialing that host, refusing the same certificate: written
	refuse("10.0.0.1:9092", dialed) // left out
	now = now.Add(RefusedRepeatWindow)
	refuse("10.0.0.1:4000", expired) // a minute after the first: written, with the 5 left out
	refuse("10.0.0.1:4000", expired) // left out again
	l.Close()

	lines := readLines(t, path)
	if len(lines) != 6 {
		t.Fatalf("%d lines, want 6: %v", len(lines), lines)
	}
	wantRepeated := []float64{0, 0, 0, 0, 0, 5}
	wantSide := []string{SideInbound, SideInbound, SideInbound, SideInbound, SideOutbound, SideInbound}
	for i, ln := range lines {
		if ln["event"] != EventDenied || ln["op"] != OpConnect || ln["resource"] != "cluster" || ln["authenticated"] != false ||
			ln["principal"] != "User:old" {
			t.Fatalf("line %d: %v", i+1, ln)
		}
		d, _ := ln["details"].(map[string]any)
		rep, _ := d["repeated"].(float64)
		wantName := map[string]any{SideInbound: nil, SideOutbound: "10.0.0.1"}[wantSide[i]]
		if rep != wantRepeated[i] || d["side"] != wantSide[i] || d["server_name"] != wantName || d["issuer"] != "CN=ca" || d["not_after"] != "2026-12-03T08:00:00Z" || d["not_before"] != "2026-12-01T09:00:00Z" {
			t.Fatalf("line %d details %v; want repeated %v", i+1, d, wantRepeated[i])
		}
	}
	if lines[0]["result"] != "expired" || lines[3]["result"] != "unknown-ca" || lines[1]["addr"] != "10.0.0.2:4000" {
		t.Fatalf("lines %v", lines)
	}
	if lines[4]["addr"] != "10.0.0.1:9092" {
		t.Fatalf("outbound line %v; want the address dialed", lines[4])
	}
	if c := l.Counts(); c.Written != 6 || c.Suppressed != 7 {
		t.Fatalf("counts %+v; want 6 written, 7 suppressed", c)
	}
	// The trail still chains.
	if _, err := verifyFile(t, path); err != nil {
		t.Fatal(err)
	}
}

// The refusals remembered are bounded: past maxRefusedKeys those older than
// the window are forgotten, or all if none is.
func TestRefusedMemoryIsBounded(t *testing.T) {
	var s refusedSeen
	now := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	for i := range maxRefusedKeys + 10 {
		if _, ok := s.take(refusedKey{host: "h", serial: string(rune(i))}, now); !ok {
			t.Fatalf("refusal %d left out", i)
		}
	}
	if n := len(s.last); n > maxRefusedKeys {
		t.Fatalf("%d refusals remembered, want at most %d", n, maxRefusedKeys)
	}
	// No detail key is renamed.
	b, _ := json.Marshal(ConnectDetails{Side: "s", ServerName: "n", Serial: "1", Issuer: "i", NotBefore: "b", NotAfter: "a", Repeated: 2})
	if string(b) != `{"side":"s","server_name":"n","serial":"1","issuer":"i","not_before":"b","not_after":"a","repeated":2}` {
		t.Fatalf("details %s", b)
	}
}
