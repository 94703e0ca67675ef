package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"paymentlog/quic"
)

// cert revoke lists a certificate (by name or serial) in revoked.txt once;
// cert list shows it REVOKED (JSON "revoked"); a CA, a missing file and bad
// flags are refused with one error line.
func TestCertRevoke(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{{"init"}, {"issue", "--name", "client"}, {"issue", "--name", "mallory"}, {"issue", "--name", "bob"}} {
		if code, _, errs := runCLI(t, append(append([]string{"cert"}, args...), "--dir", dir)...); code != 0 {
			t.Fatalf("cert %v: %s", args, errs)
		}
	}
	code, out, errs := runCLI(t, "cert", "revoke", "--dir", dir, "--name", "mallory", "--reason", "laptop stolen")
	if code != 0 || !strings.HasPrefix(out, "revoked mallory (serial ") {
		t.Fatalf("revoke: %d %q %q", code, out, errs)
	}
	if code, out, _ := runCLI(t, "cert", "revoke", "--name", "mallory", "--dir", dir); code != 0 || !strings.Contains(out, "is already in") {
		t.Fatalf("revoke again: %d %q", code, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, quic.RevokedFile))
	if err != nil || strings.Count(string(b), "\n") != 1 || !strings.Contains(string(b), ": mallory laptop stolen\n") {
		t.Fatalf("revoked.txt %q, %v", b, err)
	}
	var certs []quic.CertInfo
	code, out, _ = runCLI(t, "cert", "list", "--dir", dir, "--json")
	if code != 0 || json.Unmarshal([]byte(out), &certs) != nil {
		t.Fatalf("list --json: %d %q", code, out)
	}
	var bobSerial string
	for _, c := range certs {
		if c.Revoked != (c.File == "mallory.crt") {
			t.Fatalf("%s revoked %v", c.File, c.Revoked)
		}
		if c.File == "bob.crt" {
			bobSerial = strings.ToUpper(c.Serial) // as openssl prints it
		}
	}
	if code, out, errs := runCLI(t, "cert", "revoke", "--dir", dir, "--serial", bobSerial); code != 0 || !strings.HasPrefix(out, "revoked serial ") {
		t.Fatalf("revoke --serial: %d %q %q", code, out, errs)
	}
	_, out, _ = runCLI(t, "cert", "list", "--dir", dir)
	for _, line := range strings.Split(out, "\n") {
		revoked := strings.HasSuffix(line, "REVOKED")
		if (strings.HasPrefix(line, "mallory.crt") || strings.HasPrefix(line, "bob.crt")) != revoked {
			t.Fatalf("list line %q", line)
		}
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--dir", dir}, 2, "give --name NAME or --serial HEX"},
		{[]string{"--dir", dir, "--name", "bob", "--serial", "0a"}, 2, "give --name NAME or --serial HEX"},
		{[]string{"--dir", dir, "--serial", "zz"}, 2, `--serial: serial "zz"`},
		{[]string{"--dir", dir, "--name", "nobody"}, 1, "nobody.crt: no such file"},
		{[]string{"--dir", dir, "--name", "ca"}, 1, "ca.crt is a CA certificate"},
		{[]string{"--name", "bob"}, 2, "missing --dir"},
	} {
		code, _, errs := runCLI(t, append([]string{"cert", "revoke"}, c.args...)...)
		if code != c.code || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, c.want) {
			t.Errorf("revoke %v: exit %d, stderr %q; want %d and %q", c.args, code, errs, c.code, c.want)
		}
	}
}
