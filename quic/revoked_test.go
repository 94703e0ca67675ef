package quic

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// A certificate listed in revoked.txt is refused: the reload that lists it
// closes the connections it holds and later handshakes fail, on the server
// side (a client's) and on the client side (a server's); other certificates
// go on. A line that does not parse makes the reload refused, keeping the
// list in force.
func TestRevokedCertificates(t *testing.T) {
	dir := reloadDirs(t)
	mustNoErr(t, IssueCert(dir, "mallory", nil, CertOptions{}))
	var mu sync.Mutex
	var told []RefusedPeer
	srv := mustServe(t, Config{TLS: TLSConfig{Dir: dir, Name: "node1"}, TLSReloadInterval: -1,
		OnRefusedPeer: func(p RefusedPeer) { mu.Lock(); told = append(told, p); mu.Unlock() }})
	cli := mustClient(t, Config{TLS: TLSConfig{Dir: dir, Name: "client"}, TLSReloadInterval: -1})
	mal := mustClient(t, Config{TLS: TLSConfig{Dir: dir, Name: "mallory"}, TLSReloadInterval: -1})
	mustNoErr(t, echo(t, cli, srv.Addr()))
	mustNoErr(t, echo(t, mal, srv.Addr()))

	serial, err := ParseSerial(mal.TLSStatus().Serial)
	mustNoErr(t, err)
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	already, err := RevokeCert(dir, serial, "key left on a\nlaptop", now)
	if err != nil || already {
		t.Fatalf("revoke: %v, %v", already, err)
	}
	if already, err := RevokeCert(dir, serial, "again", now); err != nil || !already {
		t.Fatalf("revoke again: %v, %v", already, err)
	}
	if got, want := string(readFile(t, filepath.Join(dir, RevokedFile))), serialKey(serial)+" # revoked 2026-12-03T10:00:00Z: key left on a laptop\n"; got != want {
		t.Fatalf("%s holds %q, want %q", RevokedFile, got, want)
	}
	if changed, err := srv.ReloadTLS(); !changed || err != nil {
		t.Fatalf("reload: %v, %v", changed, err)
	}
	waitFor(t, 5*time.Second, "mallory's connection closed", func() bool { return len(mal.pool.dialedConns()) == 0 })
	if err := echo(t, mal, srv.Addr()); err == nil {
		t.Fatal("a revoked certificate still gets answers")
	}
	mustNoErr(t, echo(t, cli, srv.Addr()))
	// The refused handshakes were reported, with mallory's address.
	mu.Lock()
	refused := slices.Clone(told)
	mu.Unlock()
	if len(refused) == 0 {
		t.Fatal("the refused handshake was not reported")
	}
	for _, p := range refused {
		if p.Name != "mallory" || p.Serial != serialKey(serial) || !strings.HasPrefix(p.Addr, "127.0.0.1:") || p.Err == nil || p.Reason != RefusedRevoked ||
			!strings.Contains(p.Err.Error(), "revoked") {
			t.Fatalf("reported %+v; want mallory's handshake from 127.0.0.1, revoked", p)
		}
	}

	// A client whose revoked.txt lists the server's certificate refuses it.
	other := t.TempDir()
	copyFiles(t, dir, other, CAFile, "client.crt", "client.key")
	nodeSerial, err := ParseSerial(srv.TLSStatus().Serial)
	mustNoErr(t, err)
	_, err = RevokeCert(other, nodeSerial, "", now)
	mustNoErr(t, err)
	wary := mustClient(t, Config{TLS: TLSConfig{Dir: other, Name: "client"}, TLSReloadInterval: -1})
	if err := echo(t, wary, srv.Addr()); err == nil {
		t.Fatal("a client accepted a revoked server certificate")
	}

	// A bad line: the reload is refused and the list stays in force.
	mustNoErr(t, os.WriteFile(filepath.Join(dir, RevokedFile), []byte("# list\nnot-a-serial\n"), 0o644))
	if changed, err := srv.ReloadTLS(); changed || err == nil || !strings.Contains(err.Error(), "revoked.txt line 2") {
		t.Fatalf("reload of a bad list: %v, %v", changed, err)
	}
	if err := echo(t, mal, srv.Addr()); err == nil {
		t.Fatal("a refused reload dropped the list")
	}
}

// ParseSerial takes what cert list and openssl print.
func TestParseSerial(t *testing.T) {
	for in, want := range map[string]string{"0a1b": "a1b", "0A:1B": "a1b", "0x1f": "1f", " ff ": "ff"} {
		n, err := ParseSerial(in)
		if err != nil || serialKey(n) != want {
			t.Errorf("ParseSerial(%q) = %v, %v; want %s", in, n, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1", "xyz", strings.Repeat("f", 65)} {
		if _, err := ParseSerial(in); err == nil {
			t.Errorf("ParseSerial(%q) accepted", in)
		}
	}
}

// FuzzParseRevoked: any bytes give a set or an error, never a panic, and
// every key is a positive serial's lowercase hex.
func FuzzParseRevoked(f *testing.F) {
	f.Add([]byte("0a1b # revoked 2026-12-03T10:00:00Z: laptop\n# comment\n\nFF:01\n"))
	f.Add([]byte("0x1f\r\n"))
	f.Add([]byte("zz\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		set, err := parseRevoked(data)
		if err != nil {
			return
		}
		for k := range set {
			n, err := ParseSerial(k)
			if err != nil || serialKey(n) != k {
				t.Fatalf("key %q from %q", k, data)
			}
		}
	})
}
