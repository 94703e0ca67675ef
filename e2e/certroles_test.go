package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestClusterScriptReissuesNodeCertificatesWithoutRole: a ./data/certs left
// by a build older than certificate roles (node certificates with neither
// role nor node id; here node1's is such a certificate and node2's a client
// certificate) does not leave a newcomer with nodes that refuse to start:
// cluster.sh up re-issues them as node certificates for their nodes and the
// cluster comes up with full ISRs.
func TestClusterScriptReissuesNodeCertificatesWithoutRole(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	c := newScriptCluster(t)
	certs := filepath.Join(c.dir, "certs")
	mustRun(t, binary, "cert", "init", "--dir", certs)
	writeRolelessCert(t, certs, "node1")
	mustRun(t, binary, "cert", "issue", "--dir", certs, "--name", "node2", "--host", "127.0.0.1")

	out := c.script(t, "up") // waits for every node alive and the topic's full ISR
	for _, n := range []string{"node1", "node2"} {
		if !strings.Contains(out, "re-issuing "+filepath.Join(certs, n+".crt")) {
			t.Errorf("up did not say it re-issued %s:\n%s", n, out)
		}
	}
	if strings.Contains(out, "re-issuing "+filepath.Join(certs, "node3.crt")) {
		t.Errorf("up re-issued node3's fresh certificate:\n%s", out)
	}
	for _, id := range []string{"1", "2", "3"} {
		mustRun(t, binary, "cert", "check", "--dir", certs, "--name", "node"+id, "--node-id", id)
	}
	env := c.clientEnv(t)
	acked := c.produce(t, env, "after-reissue", 50)
	got := c.consumeAll(t, env)
	for value, at := range acked {
		if got[at] != value {
			t.Errorf("%v holds %q, acknowledged %q", at, got[at], value)
		}
	}
}

func mustRun(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// writeRolelessCert writes dir/name.crt and .key the way builds before
// certificate roles issued them: signed by the CA in dir, no OU, no URI SAN.
func writeRolelessCert(t *testing.T, dir, name string) {
	t.Helper()
	read := func(f string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		blk, _ := pem.Decode(b)
		if blk == nil {
			t.Fatalf("%s: no PEM block", f)
		}
		return blk.Bytes
	}
	ca, err := x509.ParseCertificate(read("ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	k, err := x509.ParsePKCS8PrivateKey(read("ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: name, Organization: []string{"paymentlog"}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".key"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
}
