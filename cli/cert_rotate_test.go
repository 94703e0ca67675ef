package cli

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"paymentlog/quic"
)

// caBundle parses every certificate in dir/ca.crt.
func caBundle(t *testing.T, dir string) []*x509.Certificate {
	t.Helper()
	rest, err := os.ReadFile(filepath.Join(dir, quic.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	var out []*x509.Certificate
	for {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			return out
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
}

// listColumns are cert list's columns.
var listColumns = []string{"FILE", "ROLE", "NODE", "SERIAL", "ISSUER", "NOT-AFTER", "DAYS-LEFT", "STATUS"}

// listRows returns the rows of `cert list` output for file, each cell by its
// column (cells hold spaces: they are cut where the header's columns start).
func listRows(t *testing.T, out, file string) []map[string]string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	header := lines[0]
	if strings.Join(strings.Fields(header), " ") != strings.Join(listColumns, " ") {
		t.Fatalf("header %q", header)
	}
	var rows []map[string]string
	for _, l := range lines[1:] {
		row := map[string]string{}
		for i, col := range listColumns {
			start, end := strings.Index(header, col), len(l)
			if i+1 < len(listColumns) {
				end = strings.Index(header, listColumns[i+1])
			}
			row[col] = strings.TrimSpace(l[start:min(end, len(l))])
		}
		if row["FILE"] == file {
			rows = append(rows, row)
		}
	}
	if len(rows) == 0 {
		t.Fatalf("no row for %s in\n%s", file, out)
	}
	return rows
}

func mustCLI(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errs := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d, stderr %q", args, code, errs)
	}
	return out
}

// The whole rotation through the command line: rotate-ca, list, a refused
// retire-ca, reissue, retire-ca, list --json.
func TestCertRotateRetireAndList(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	mustCLI(t, "cert", "init", "--dir", dir)
	mustCLI(t, "cert", "issue", "--dir", dir, "--name", "node1", "--node-id", "1")
	mustCLI(t, "cert", "issue", "--dir", dir, "--name", "client")
	oldCA := caBundle(t, dir)[0]

	out := mustCLI(t, "cert", "rotate-ca", "--dir", dir, "--days", "100")
	bundle := caBundle(t, dir)
	if len(bundle) != 2 || !bundle[1].Equal(oldCA) {
		t.Fatalf("after rotate-ca ca.crt holds %d CAs, want the new one and the old one", len(bundle))
	}
	for _, want := range []string{
		"new CA \"" + bundle[0].Subject.CommonName + "\"",
		"expires " + bundle[0].NotAfter.UTC().Format(time.DateOnly),
		"now trusts 2 CAs", "SIGHUP", "--tls-reload-interval",
		"`paymentlog cert issue --dir " + dir + " --name NAME --force`", "in " + dir + ": client.crt, node1.crt",
		"`paymentlog cert retire-ca --dir " + dir + "`",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("rotate-ca output lacks %q:\n%s", want, out)
		}
	}

	out = mustCLI(t, "cert", "list", "--dir", dir)
	cas := listRows(t, out, "ca.crt")
	if len(cas) != 2 || cas[0]["STATUS"] != "current CA" || cas[1]["STATUS"] != "retiring CA" || cas[0]["DAYS-LEFT"] != "100" {
		t.Fatalf("CA rows: %q", cas)
	}
	if row := listRows(t, out, "node1.crt")[0]; row["STATUS"] != "signed by a retiring CA" || row["NODE"] != "1" || row["ISSUER"] != "paymentlog cluster CA" {
		t.Fatalf("node1 row: %q", row)
	}

	before, err := os.ReadFile(filepath.Join(dir, quic.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "cert", "retire-ca", "--dir", dir)
	if code != 1 || out != "" || strings.Count(errs, "\n") != 1 {
		t.Fatalf("retire-ca before reissuing: exit %d, stdout %q, stderr %q; want 1 and one line", code, out, errs)
	}
	for _, want := range []string{"refusing to retire", " client.crt (", " node1.crt (", "--name node1 --node-id 1 --host 127.0.0.1,localhost --force`", "`paymentlog cert issue --force`"} {
		if !strings.Contains(errs, want) {
			t.Errorf("refusal %q lacks %q", errs, want)
		}
	}
	if after, _ := os.ReadFile(filepath.Join(dir, quic.CAFile)); !bytes.Equal(after, before) {
		t.Fatal("a refused retire-ca changed ca.crt")
	}

	mustCLI(t, "cert", "issue", "--dir", dir, "--name", "node1", "--node-id", "1", "--force")
	mustCLI(t, "cert", "issue", "--dir", dir, "--name", "client", "--force")
	out = mustCLI(t, "cert", "retire-ca", "--dir", dir)
	if !strings.Contains(out, "retired CA \"paymentlog cluster CA\"") || !strings.Contains(out, "now trusts only the current CA") {
		t.Fatalf("retire-ca: %q", out)
	}
	if after := caBundle(t, dir); len(after) != 1 || !after[0].Equal(bundle[0]) {
		t.Fatalf("after retire-ca ca.crt holds %d CAs, want the new one only", len(after))
	}
	if out := mustCLI(t, "cert", "retire-ca", "--dir", dir); !strings.Contains(out, "nothing to retire") {
		t.Fatalf("second retire-ca: %q", out)
	}

	out = mustCLI(t, "cert", "list", "--dir", dir, "--json")
	var certs []quic.CertInfo
	if err := json.Unmarshal([]byte(out), &certs); err != nil {
		t.Fatalf("list --json: %v\n%s", err, out)
	}
	if len(certs) != 3 || certs[0].File != quic.CAFile || !certs[0].CurrentCA || certs[2].File != "node1.crt" {
		t.Fatalf("list --json: %+v", certs)
	}
	if n := certs[2]; n.Role != "node" || n.NodeID != 1 || !n.SignedByCurrentCA || !n.Trusted || n.Expired || n.Issuer != bundle[0].Subject.CommonName {
		t.Fatalf("node1 in list --json: %+v", n)
	}
}

// cert list's statuses, as of the real clock: certificates issued in the
// past through the library expire on time.
func TestCertListStatuses(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	day := 24 * time.Hour
	for _, step := range []func() error{
		func() error { return quic.InitCA(dir, quic.CertOptions{}) },
		func() error { return quic.IssueCert(dir, "node1", nil, quic.CertOptions{NodeID: 1}) },
		func() error { return quic.IssueCert(dir, "soon", nil, quic.CertOptions{Validity: 10 * day}) },
		func() error {
			return quic.IssueCert(dir, "gone", nil, quic.CertOptions{Now: func() time.Time { return now.Add(-400 * day) }, Validity: 365 * day})
		},
		func() error { return os.WriteFile(filepath.Join(dir, "junk.crt"), []byte("garbage"), 0o644) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	foreign := t.TempDir()
	if err := quic.InitCA(foreign, quic.CertOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := quic.IssueCert(foreign, "rogue", nil, quic.CertOptions{}); err != nil {
		t.Fatal(err)
	}
	rogue, err := os.ReadFile(filepath.Join(foreign, "rogue.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rogue.crt"), rogue, 0o644); err != nil {
		t.Fatal(err)
	}

	out := mustCLI(t, "cert", "list", "--dir", dir)
	for file, status := range map[string]string{
		"ca.crt":    "current CA",
		"node1.crt": "ok",
		"soon.crt":  "expires in 10 days",
		"gone.crt":  "EXPIRED",
		"rogue.crt": "NOT TRUSTED",
		"junk.crt":  "no PEM certificate",
	} {
		if row := listRows(t, out, file)[0]; !strings.HasSuffix(row["STATUS"], status) {
			t.Errorf("%s: row %q, want status %q", file, row, status)
		}
	}
	if row := listRows(t, out, "soon.crt")[0]; row["DAYS-LEFT"] != "10" || row["ROLE"] != "client" || row["NODE"] != "-" {
		t.Errorf("soon.crt: %q, want 10 days left", row)
	}
	if row := listRows(t, out, "node1.crt")[0]; row["ROLE"] != "node" || row["NODE"] != "1" {
		t.Errorf("node1.crt: %q", row)
	}
}

// retire-ca --force retires a CA that certificates still need, and warns
// about each.
func TestCertRetireCAForce(t *testing.T) {
	dir := t.TempDir()
	mustCLI(t, "cert", "init", "--dir", dir)
	mustCLI(t, "cert", "issue", "--dir", dir, "--name", "node1", "--node-id", "1")
	mustCLI(t, "cert", "rotate-ca", "--dir", dir)
	newCA := caBundle(t, dir)[0]
	code, out, errs := runCLI(t, "cert", "retire-ca", "--dir", dir, "--force")
	if code != 0 || !strings.Contains(out, "retired CA") || !strings.Contains(errs, "warning: node1.crt is not trusted any more") {
		t.Fatalf("retire-ca --force: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if after := caBundle(t, dir); len(after) != 1 || !after[0].Equal(newCA) {
		t.Fatalf("after retire-ca --force ca.crt holds %d CAs, want the new one only", len(after))
	}
	if row := listRows(t, mustCLI(t, "cert", "list", "--dir", dir), "node1.crt")[0]; row["STATUS"] != "NOT TRUSTED" {
		t.Fatalf("node1 after a forced retire: %q", row)
	}
}

// Usage errors: one line on stderr, exit 2, nothing done.
func TestCertRotateUsageErrors(t *testing.T) {
	dir := t.TempDir()
	mustCLI(t, "cert", "init", "--dir", dir)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"cert", "rotate-ca", "--dir", dir, "--days", "0"}, "--days must be positive"},
		{[]string{"cert", "rotate-ca", "--dir", dir, "extra"}, "cert rotate-ca takes no arguments"},
		{[]string{"cert", "retire-ca", "--dir", dir, "extra"}, "cert retire-ca takes no arguments"},
		{[]string{"cert", "list", "--dir", dir, "--json", "extra"}, "cert list takes no arguments"},
		{[]string{"cert", "list", "--dir", dir, "--nosuch"}, "--nosuch"},
	} {
		code, out, errs := runCLI(t, c.args...)
		if code != 2 || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and %q", c.args, code, out, errs, c.want)
		}
	}
	if n := len(caBundle(t, dir)); n != 1 {
		t.Fatalf("a usage error rotated the CA: %d CAs", n)
	}
	for _, env := range []string{"PAYMENTLOG_CERT_DIR", "PAYMENTLOG_TLS_DIR"} {
		t.Setenv(env, "")
		os.Unsetenv(env)
	}
	for _, cmd := range []string{"rotate-ca", "retire-ca", "list"} {
		if code, _, errs := runCLI(t, "cert", cmd); code != 2 || !strings.Contains(errs, "missing --dir") {
			t.Errorf("%s without --dir: exit %d, stderr %q", cmd, code, errs)
		}
	}
	empty := t.TempDir()
	if code, _, errs := runCLI(t, "cert", "rotate-ca", "--dir", empty); code != 1 || !strings.Contains(errs, "cert init") {
		t.Errorf("rotate-ca without a CA: exit %d, stderr %q", code, errs)
	}
}
