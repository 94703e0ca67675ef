package cli

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"paymentlog/quic"
)

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := RunContext(context.Background(), append([]string{"paymentlog"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func TestCertInitAndIssue(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	if code, out, errs := runCLI(t, "cert", "init", "--dir", dir); code != 0 || !strings.Contains(out, "ca.crt") {
		t.Fatalf("init: %d %q %q", code, out, errs)
	}
	// Flags after the subcommand in any order; --host with several entries.
	if code, out, errs := runCLI(t, "cert", "issue", "--name", "node1", "--dir", dir, "--host", "127.0.0.1,localhost", "--node-id", "1"); code != 0 ||
		!strings.Contains(out, "node certificate for node 1") {
		t.Fatalf("issue: %d %q %q", code, out, errs)
	}
	// Name given positionally with flags after it.
	if code, _, errs := runCLI(t, "cert", "issue", "client", "--dir", dir); code != 0 {
		t.Fatalf("issue client: %d %q", code, errs)
	}
	if code, _, errs := runCLI(t, "cert", "issue", "--dir", dir, "--name", "node2", "--role", "node", "--node-id", "2"); code != 0 {
		t.Fatalf("issue node2: %d %q", code, errs)
	}
	if code, _, errs := runCLI(t, "cert", "issue", "--dir", dir, "--name", "app", "--role", "client"); code != 0 {
		t.Fatalf("issue app: %d %q", code, errs)
	}
	for name, want := range map[string]quic.Identity{
		"node1": {Role: quic.RoleNode, NodeID: 1}, "node2": {Role: quic.RoleNode, NodeID: 2},
		"client": {Role: quic.RoleClient}, "app": {Role: quic.RoleClient},
	} {
		if got, err := quic.LoadIdentity(quic.TLSConfig{Dir: dir, Name: name}); err != nil || got != want {
			t.Fatalf("%s: %+v %v, want %+v", name, got, err, want)
		}
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	crtPEM, err := os.ReadFile(filepath.Join(dir, "node1.crt"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(crtPEM)
	crt, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if crt.Subject.CommonName != "node1" {
		t.Fatalf("CN %q", crt.Subject.CommonName)
	}
	for _, host := range []string{"127.0.0.1", "localhost"} {
		for _, u := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
			if _, err := crt.Verify(x509.VerifyOptions{Roots: roots, DNSName: host, KeyUsages: []x509.ExtKeyUsage{u}}); err != nil {
				t.Fatalf("%s usage %v: %v", host, u, err)
			}
		}
	}
	for _, f := range []string{"ca.key", "node1.key", "client.key"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", f, err, st.Mode())
		}
	}
}

func TestCertRefusesToOverwriteAndReportsErrors(t *testing.T) {
	dir := t.TempDir()
	if code, _, errs := runCLI(t, "cert", "init", "--dir", dir); code != 0 {
		t.Fatal(errs)
	}
	code, _, errs := runCLI(t, "cert", "init", "--dir", dir)
	if code != 1 || !strings.Contains(errs, "overwrite") || strings.Count(errs, "\n") != 1 {
		t.Fatalf("second init: %d %q", code, errs)
	}
	if code, _, errs := runCLI(t, "cert", "init", "--dir", dir, "--force"); code != 0 {
		t.Fatalf("forced init: %q", errs)
	}
	if code, _, errs := runCLI(t, "cert", "issue", "--dir", dir); code != 2 || !strings.Contains(errs, "--name") {
		t.Fatalf("issue without name: %d %q", code, errs)
	}
	if code, _, errs := runCLI(t, "cert", "issue", "--dir", dir, "--name", "../x"); code != 1 || !strings.Contains(errs, "name") {
		t.Fatalf("bad name: %d %q", code, errs)
	}
	empty := t.TempDir()
	if code, _, errs := runCLI(t, "cert", "issue", "--dir", empty, "--name", "n"); code != 1 || !strings.Contains(errs, "cert init") {
		t.Fatalf("issue without CA: %d %q", code, errs)
	}
}

// cert issue's role flags: usage errors are one line on stderr, exit 2,
// and issue nothing.
func TestCertIssueRoleUsageErrors(t *testing.T) {
	dir := t.TempDir()
	if code, _, errs := runCLI(t, "cert", "init", "--dir", dir); code != 0 {
		t.Fatal(errs)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--node-id", "0"}, "--node-id"},
		{[]string{"--node-id", "-3"}, "--node-id"},
		{[]string{"--node-id", "4294967297"}, "--node-id"},
		{[]string{"--node-id", "x"}, "node-id"},
		{[]string{"--role", "node"}, "--role node needs --node-id"},
		{[]string{"--role", "client", "--node-id", "1"}, "--role client takes no --node-id"},
		{[]string{"--role", "admin"}, "--role must be node or client"},
	} {
		args := append([]string{"cert", "issue", "--dir", dir, "--name", "n"}, c.args...)
		code, out, errs := runCLI(t, args...)
		if code != 2 || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and %q", c.args, code, out, errs, c.want)
		}
		if _, err := os.Stat(filepath.Join(dir, "n.crt")); err == nil {
			t.Fatalf("%v issued a certificate", c.args)
		}
	}
}

// A node whose certificate is not a node certificate for its --id refuses
// to start (exit 1, one line) and says how to issue the right one.
func TestNodeStartRefusesClientCertificate(t *testing.T) {
	dir := t.TempDir()
	certs := filepath.Join(dir, "certs")
	if code, _, errs := runCLI(t, "cert", "init", "--dir", certs); code != 0 {
		t.Fatal(errs)
	}
	if code, _, errs := runCLI(t, "cert", "issue", "--dir", certs, "--name", "node1"); code != 0 { // a client certificate
		t.Fatal(errs)
	}
	// Bounded: a node that did start would run until its context ends.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code := RunContext(ctx, []string{"paymentlog", "node", "start", "--id", "1", "--addr", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "n1"),
		"--controllers", "1@127.0.0.1:0", "--tls-dir", certs}, &out, &errb)
	errs := errb.String()
	fix := "paymentlog cert issue --dir " + certs + " --name node1 --node-id 1 --force"
	if code != 1 || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "client certificate") || !strings.Contains(errs, fix) {
		t.Fatalf("exit %d, stderr %q; want 1 and the fix %q", code, errs, fix)
	}
}

// cert check prints the role and, with --node-id, fails unless the
// certificate is that node's (scripts/cluster.sh re-issues on failure).
func TestCertCheck(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"init", "--dir", dir},
		{"issue", "--dir", dir, "--name", "node1", "--node-id", "1"},
		{"issue", "--dir", dir, "--name", "client"},
	} {
		if code, _, errs := runCLI(t, append([]string{"cert"}, args...)...); code != 0 {
			t.Fatalf("%v: %s", args, errs)
		}
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--name", "node1"}, 0, "node certificate for node 1"},
		{[]string{"--name", "node1", "--node-id", "1"}, 0, "node certificate for node 1"},
		{[]string{"client"}, 0, "client certificate"},
		// Someone else's certificate: the error says what it is and names
		// the node's own certificate, never re-issuing this one.
		{[]string{"--name", "node1", "--node-id", "2"}, 1, "is a node certificate for node 1, not a node certificate for node 2"},
		{[]string{"--name", "node1", "--node-id", "2"}, 1, "--name node2 --node-id 2`"},
		{[]string{"--name", "client", "--node-id", "1"}, 1, "is a client certificate, not a node certificate for node 1"},
		{[]string{"--name", "client", "--node-id", "1"}, 1, "--name node1 --node-id 1`"},
		{[]string{"--name", "missing"}, 1, "missing.crt"},
		{[]string{"--name", "node1", "--node-id", "0"}, 2, "--node-id"},
		{nil, 2, "--name"},
	} {
		code, out, errs := runCLI(t, append([]string{"cert", "check", "--dir", dir}, c.args...)...)
		if code != c.code || !strings.Contains(out+errs, c.want) || (code != 0 && strings.Count(errs, "\n") != 1) ||
			strings.Contains(errs, "--force") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d and %q", c.args, code, out, errs, c.code, c.want)
		}
	}
}

func TestCertFlagsFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PAYMENTLOG_CERT_DIR", dir)
	if code, _, errs := runCLI(t, "cert", "init"); code != 0 {
		t.Fatal(errs)
	}
	t.Setenv("PAYMENTLOG_CERT_NAME", "node7")
	t.Setenv("PAYMENTLOG_CERT_HOST", "10.0.0.7")
	if code, _, errs := runCLI(t, "cert", "issue"); code != 0 {
		t.Fatal(errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "node7.crt")); err != nil {
		t.Fatal(err)
	}
}

// TestCertMissingDirIsAUsageError: without --dir (or PAYMENTLOG_TLS_DIR)
// every cert command is a usage error: one line on stderr naming --dir, exit
// status 2, nothing on stdout. urfave/cli's Required printed the whole help
// text to stdout and exited 1.
func TestCertMissingDirIsAUsageError(t *testing.T) {
	for _, env := range []string{"PAYMENTLOG_CERT_DIR", "PAYMENTLOG_TLS_DIR"} {
		t.Setenv(env, "")
		os.Unsetenv(env)
	}
	for _, args := range [][]string{
		{"cert", "init"},
		{"cert", "issue", "--name", "node1", "--node-id", "1"},
		{"cert", "check", "--name", "node1"},
	} {
		code, out, errs := runCLI(t, args...)
		if code != 2 || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "missing --dir") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2, no output and one line naming --dir", args, code, out, errs)
		}
	}
}
