package quic

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A directory in mid-rotation, listed 20 days after rotT0: node1 and the
// expired "old" of the old CA, node2 and "soon" (expiring) of the new one,
// a foreign CA's certificate and a file that is no certificate.
func TestListCerts(t *testing.T) {
	now := rotT0.Add(20 * 24 * time.Hour)
	dir := mustRotDir(t,
		issue("node1", 1, "127.0.0.1"),
		func(dir string) error {
			return IssueCert(dir, "old", nil, CertOptions{Now: at(rotT0.Add(-400 * 24 * time.Hour)), Validity: 365 * 24 * time.Hour})
		},
		func(dir string) error {
			_, err := RotateCA(dir, CertOptions{Now: at(rotT0.Add(time.Hour))})
			return err
		},
		issue("node2", 2),
		func(dir string) error {
			return IssueCert(dir, "soon", nil, CertOptions{Now: at(rotT0), Validity: 30 * 24 * time.Hour})
		},
	)
	foreign := mustRotDir(t, issue("rogue", 0))
	mustRot(t, os.WriteFile(filepath.Join(dir, "rogue.crt"), mustRead(t, filepath.Join(foreign, "rogue.crt")), 0o644))
	mustRot(t, os.WriteFile(filepath.Join(dir, "junk.crt"), []byte("garbage"), 0o644))
	bundle := pemCerts(t, filepath.Join(dir, CAFile))

	got, err := ListCerts(dir, now)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		file, role     string
		node           int32
		current, byCur bool
		trusted, exp   bool
	}
	want := []row{
		{CAFile, "ca", 0, true, false, false, false},
		{CAFile, "ca", 0, false, false, false, false},
		{"junk.crt", "", 0, false, false, false, false},
		{"node1.crt", "node", 1, false, false, true, false},
		{"node2.crt", "node", 2, false, true, true, false},
		{"old.crt", "client", 0, false, false, false, true},
		{"rogue.crt", "client", 0, false, false, false, false},
		{"soon.crt", "client", 0, false, true, true, false},
	}
	if len(got) != len(want) {
		t.Fatalf("listed %d entries, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if r := (row{g.File, g.Role, g.NodeID, g.CurrentCA, g.SignedByCurrentCA, g.Trusted, g.Expired}); r != w {
			t.Errorf("entry %d: %+v, want %+v", i, r, w)
		}
	}
	if got[2].Error == "" || got[2].Name != "" {
		t.Errorf("junk.crt: %+v, want an error", got[2])
	}
	for i, g := range got {
		if i != 2 && g.Error != "" {
			t.Errorf("%s: unexpected error %q", g.File, g.Error)
		}
	}
	for i := range 2 {
		if got[i].Serial != hex.EncodeToString(bundle[i].SerialNumber.Bytes()) || got[i].Name != bundle[i].Subject.CommonName {
			t.Errorf("CA %d: %+v, want %s serial %x", i, got[i], bundle[i].Subject.CommonName, bundle[i].SerialNumber)
		}
	}
	if got[3].Issuer != bundle[1].Subject.CommonName || got[4].Issuer != bundle[0].Subject.CommonName || got[3].Name != "node1" {
		t.Errorf("issuers: node1 %q, node2 %q", got[3].Issuer, got[4].Issuer)
	}
	if left := got[7].ExpiresIn(now); left != 10*24*time.Hour {
		t.Errorf("soon expires in %v, want 240h", left)
	}
	if left := got[5].ExpiresIn(now); left >= 0 {
		t.Errorf("old expires in %v, want negative", left)
	}

	b, err := json.Marshal(got[3])
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"file":"node1.crt"`, `"node_id":1`, `"signed_by_current_ca":false`, `"trusted":true`, `"not_after":"`, `"current_ca":false`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("JSON %s lacks %s", b, key)
		}
	}
}

// A node's directory has no ca.key: no CA is current, and that is no error.
// A ca.key of no CA in ca.crt is reported.
func TestListCertsWithoutOrWithForeignCAKey(t *testing.T) {
	src := mustRotDir(t, issue("node1", 1))
	dir := t.TempDir()
	for _, f := range []string{CAFile, "node1.crt"} {
		mustRot(t, os.WriteFile(filepath.Join(dir, f), mustRead(t, filepath.Join(src, f)), 0o644))
	}
	got, err := ListCerts(dir, rotT0)
	if err != nil || len(got) != 2 {
		t.Fatalf("node directory: %+v %v", got, err)
	}
	if got[0].CurrentCA || got[0].Error != "" || got[1].SignedByCurrentCA || !got[1].Trusted {
		t.Fatalf("node directory: %+v", got)
	}

	foreign := mustRotDir(t)
	mustRot(t, os.WriteFile(filepath.Join(dir, CAKeyFile), mustRead(t, filepath.Join(foreign, CAKeyFile)), 0o600))
	got, err = ListCerts(dir, rotT0)
	if err != nil || len(got) != 3 || got[1].File != CAKeyFile || !strings.Contains(got[1].Error, "key of none") {
		t.Fatalf("foreign ca.key: %+v %v", got, err)
	}

	if _, err := ListCerts(filepath.Join(dir, "missing"), rotT0); err == nil {
		t.Fatal("listing a missing directory succeeded")
	}
}
