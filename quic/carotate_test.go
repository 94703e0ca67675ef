package quic

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// rotT0 is the clock of the rotation and listing tests.
var rotT0 = time.Date(2026, 12, 2, 15, 50, 4, 0, time.UTC)

func at(t time.Time) func() time.Time { return func() time.Time { return t } }

// mustRotDir is a TLS directory with a CA made at rotT0 and the given steps
// (IssueCert and the like) run in it.
func mustRotDir(tb testing.TB, steps ...func(dir string) error) string {
	tb.Helper()
	dir := tb.TempDir()
	if err := InitCA(dir, CertOptions{Now: at(rotT0)}); err != nil {
		tb.Fatal(err)
	}
	for _, s := range steps {
		if err := s(dir); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}

func issue(name string, nodeID int32, hosts ...string) func(string) error {
	return func(dir string) error {
		return IssueCert(dir, name, hosts, CertOptions{Now: at(rotT0), NodeID: nodeID, Force: true})
	}
}

// pemCerts parses every certificate in the PEM file path, independently of
// the code under test.
func pemCerts(tb testing.TB, path string) []*x509.Certificate {
	tb.Helper()
	rest, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var out []*x509.Certificate
	for {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			return out
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			tb.Fatalf("%s: %v", path, err)
		}
		out = append(out, c)
	}
}

func pemCert(tb testing.TB, path string) *x509.Certificate {
	tb.Helper()
	certs := pemCerts(tb, path)
	if len(certs) != 1 {
		tb.Fatalf("%s holds %d certificates, want 1", path, len(certs))
	}
	return certs[0]
}

func pemKey(tb testing.TB, path string) *ecdsa.PrivateKey {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		tb.Fatalf("%s: no PEM", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		tb.Fatal(err)
	}
	return k.(*ecdsa.PrivateKey)
}

// trustedBy verifies leaf against the CAs in bundle at now, as endpoints do.
func trustedBy(leaf *x509.Certificate, bundle []*x509.Certificate, now time.Time) error {
	pool := x509.NewCertPool()
	for _, c := range bundle {
		pool.AddCert(c)
	}
	_, err := leaf.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	return err
}

func mustRot(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

func mustRead(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func TestRotateCABundlesNewThenOld(t *testing.T) {
	dir := mustRotDir(t, issue("node1", 1, "127.0.0.1"))
	oldCA := pemCert(t, filepath.Join(dir, CAFile))
	oldLeaf := pemCert(t, filepath.Join(dir, "node1.crt"))
	now := rotT0.Add(24 * time.Hour)

	info, err := RotateCA(dir, CertOptions{Now: at(now), Validity: 100 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	bundle := pemCerts(t, filepath.Join(dir, CAFile))
	if len(bundle) != 2 || !bundle[1].Equal(oldCA) || bundle[0].Equal(oldCA) {
		t.Fatalf("ca.crt holds %d certificates, want the new CA then the old one", len(bundle))
	}
	newCA := bundle[0]
	if want := "paymentlog cluster CA 2026-12-03 15:50:04"; newCA.Subject.CommonName != want || !newCA.IsCA {
		t.Fatalf("new CA: CN %q, IsCA %v; want %q, a CA", newCA.Subject.CommonName, newCA.IsCA, want)
	}
	if !newCA.NotAfter.Equal(now.Add(100 * 24 * time.Hour)) {
		t.Fatalf("new CA expires %v, want %v", newCA.NotAfter, now.Add(100*24*time.Hour))
	}
	if !isKeyOf(newCA, pemKey(t, filepath.Join(dir, CAKeyFile))) {
		t.Fatal("ca.key is not the new CA's key")
	}
	if st, err := os.Stat(filepath.Join(dir, CAKeyFile)); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("ca.key: %v %v", err, st.Mode())
	}
	if info.Name != newCA.Subject.CommonName || info.Serial != hex.EncodeToString(newCA.SerialNumber.Bytes()) || !info.CurrentCA ||
		info.Role != RoleCA || info.File != CAFile || !info.NotAfter.Equal(newCA.NotAfter) {
		t.Fatalf("returned %+v, not the new CA", info)
	}

	// Issued after the rotation: signed by the new CA.
	if err := issue("node2", 2, "127.0.0.1")(dir); err != nil {
		t.Fatal(err)
	}
	newLeaf := pemCert(t, filepath.Join(dir, "node2.crt"))
	if err := newLeaf.CheckSignatureFrom(newCA); err != nil {
		t.Fatalf("node2 not signed by the new CA: %v", err)
	}
	if newLeaf.CheckSignatureFrom(oldCA) == nil {
		t.Fatal("node2 signed by the old CA")
	}
	// The bundle trusts both generations.
	for name, leaf := range map[string]*x509.Certificate{"old": oldLeaf, "new": newLeaf} {
		if err := trustedBy(leaf, bundle, now); err != nil {
			t.Fatalf("%s leaf not trusted by the bundle: %v", name, err)
		}
	}
	if trustedBy(oldLeaf, bundle[:1], now) == nil {
		t.Fatal("the new CA alone trusts the old leaf: the test proves nothing")
	}

	// Rotating again keeps every CA, once each, newest first: a duplicate
	// in the old ca.crt is written once.
	dup := append(mustRead(t, filepath.Join(dir, CAFile)), encodeCerts(oldCA)...)
	if err := os.WriteFile(filepath.Join(dir, CAFile), dup, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := RotateCA(dir, CertOptions{Now: at(now.Add(time.Hour))}); err != nil {
		t.Fatal(err)
	}
	again := pemCerts(t, filepath.Join(dir, CAFile))
	if len(again) != 3 || !again[1].Equal(newCA) || !again[2].Equal(oldCA) {
		t.Fatalf("second rotation: ca.crt holds %d certificates, want newest, new, old", len(again))
	}
}

func TestRotateCANeedsACA(t *testing.T) {
	dir := t.TempDir()
	if _, err := RotateCA(dir, CertOptions{}); err == nil || !strings.Contains(err.Error(), "cert init") {
		t.Fatalf("rotate without a CA: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("rotate without a CA wrote %d files", len(entries))
	}
}

// A crash after ca.crt is written and before ca.key is: the directory still
// issues, with the old CA, whose certificate the new ca.crt holds; rotating
// again finishes.
func TestRotateCACrashBeforeKeyIsWritten(t *testing.T) {
	dir := mustRotDir(t)
	oldCA := pemCert(t, filepath.Join(dir, CAFile))
	oldKey := mustRead(t, filepath.Join(dir, CAKeyFile))
	crash := errors.New("crash")
	writeCAFile = func(path string, data []byte, mode os.FileMode) error {
		if filepath.Base(path) == CAKeyFile {
			return crash
		}
		return writeFileAtomic(path, data, mode)
	}
	t.Cleanup(func() { writeCAFile = writeFileAtomic })
	if _, err := RotateCA(dir, CertOptions{Now: at(rotT0)}); !errors.Is(err, crash) || !strings.Contains(err.Error(), "rotate-ca again") {
		t.Fatalf("rotate with a failing key write: %v", err)
	}
	writeCAFile = writeFileAtomic

	bundle := pemCerts(t, filepath.Join(dir, CAFile))
	if len(bundle) != 2 || !bundle[1].Equal(oldCA) {
		t.Fatalf("ca.crt holds %d certificates, want the new CA (written first) and the old one", len(bundle))
	}
	if !bytes.Equal(mustRead(t, filepath.Join(dir, CAKeyFile)), oldKey) {
		t.Fatal("ca.key changed")
	}
	if err := issue("node1", 1)(dir); err != nil {
		t.Fatalf("issue after the crash: %v", err)
	}
	leaf := pemCert(t, filepath.Join(dir, "node1.crt"))
	if err := leaf.CheckSignatureFrom(oldCA); err != nil {
		t.Fatalf("issued after the crash, not by the CA of ca.key: %v", err)
	}
	if err := trustedBy(leaf, bundle, rotT0); err != nil {
		t.Fatal(err)
	}

	if _, err := RotateCA(dir, CertOptions{Now: at(rotT0.Add(time.Second))}); err != nil {
		t.Fatal(err)
	}
	final := pemCerts(t, filepath.Join(dir, CAFile))
	if len(final) != 3 || !isKeyOf(final[0], pemKey(t, filepath.Join(dir, CAKeyFile))) || !final[2].Equal(oldCA) {
		t.Fatalf("rotation after the crash: %d CAs, ca.key the first's: %v", len(final), isKeyOf(final[0], pemKey(t, filepath.Join(dir, CAKeyFile))))
	}
}

// IssueCert signs with the CA of ca.key wherever it stands in ca.crt, and
// says so when ca.key belongs to none.
func TestIssueCertPicksTheCAOfTheKey(t *testing.T) {
	dir := mustRotDir(t)
	if _, err := RotateCA(dir, CertOptions{Now: at(rotT0.Add(time.Hour))}); err != nil {
		t.Fatal(err)
	}
	bundle := pemCerts(t, filepath.Join(dir, CAFile))
	newCA, oldCA := bundle[0], bundle[1]
	// The current CA last.
	if err := os.WriteFile(filepath.Join(dir, CAFile), encodeCerts(oldCA, newCA), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := issue("client", 0)(dir); err != nil {
		t.Fatal(err)
	}
	if err := pemCert(t, filepath.Join(dir, "client.crt")).CheckSignatureFrom(newCA); err != nil {
		t.Fatalf("not signed by the CA of ca.key: %v", err)
	}

	other := mustRotDir(t)
	if err := os.WriteFile(filepath.Join(dir, CAKeyFile), mustRead(t, filepath.Join(other, CAKeyFile)), 0o600); err != nil {
		t.Fatal(err)
	}
	err := IssueCert(dir, "client2", nil, CertOptions{})
	if err == nil || !strings.Contains(err.Error(), "ca.key is the key of none of the 2 certificate(s)") {
		t.Fatalf("issue with a foreign ca.key: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "client2.crt")); err == nil {
		t.Fatal("issued with a foreign ca.key")
	}
}

func TestInitCAForceAfterRotationMakesOneCA(t *testing.T) {
	dir := mustRotDir(t)
	if _, err := RotateCA(dir, CertOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := InitCA(dir, CertOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if n := len(pemCerts(t, filepath.Join(dir, CAFile))); n != 1 {
		t.Fatalf("ca.crt holds %d CAs after a forced init, want 1", n)
	}
}

func TestRetireCAsRefusesWhileCertificatesNeedTheOldCA(t *testing.T) {
	dir := mustRotDir(t, issue("node1", 1, "127.0.0.1", "localhost"), issue("client", 0))
	oldLeaf := pemCert(t, filepath.Join(dir, "node1.crt"))
	if _, err := RotateCA(dir, CertOptions{Now: at(rotT0.Add(time.Hour))}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "junk.crt"), []byte("not a certificate"), 0o644); err != nil {
		t.Fatal(err)
	}
	bundle := pemCerts(t, filepath.Join(dir, CAFile))
	before := mustRead(t, filepath.Join(dir, CAFile))

	refused := func(want ...string) {
		t.Helper()
		retired, err := RetireCAs(dir, false)
		var inUse *CAInUseError
		if !errors.As(err, &inUse) || retired != nil {
			t.Fatalf("retire: %v, %v; want a *CAInUseError", retired, err)
		}
		var got []string
		for _, s := range inUse.Certs {
			got = append(got, s.File)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("refusal names %v, want %v", got, want)
		}
		for _, f := range want {
			if !strings.Contains(err.Error(), " "+f+" (") {
				t.Fatalf("refusal %q does not name %s", err, f)
			}
		}
		if !strings.Contains(err.Error(), "`paymentlog cert issue --force`") {
			t.Fatalf("refusal %q does not say to reissue", err)
		}
		if !bytes.Equal(mustRead(t, filepath.Join(dir, CAFile)), before) {
			t.Fatal("a refused retire changed ca.crt")
		}
	}
	refused("client.crt", "junk.crt", "node1.crt")
	_, err := RetireCAs(dir, false)
	if fix := "`paymentlog cert issue --dir " + dir + " --name node1 --node-id 1 --host 127.0.0.1,localhost --force`"; !strings.Contains(err.Error(), fix) {
		t.Fatalf("refusal %q lacks node1's fix %s", err, fix)
	}

	mustRot(t, issue("node1", 1, "127.0.0.1", "localhost")(dir))
	refused("client.crt", "junk.crt")
	mustRot(t, issue("client", 0)(dir))
	mustRot(t, os.Remove(filepath.Join(dir, "junk.crt")))

	retired, err := RetireCAs(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(retired) != 1 || retired[0].Serial != hex.EncodeToString(bundle[1].SerialNumber.Bytes()) || retired[0].CurrentCA {
		t.Fatalf("retired %+v, want the old CA only", retired)
	}
	after := pemCerts(t, filepath.Join(dir, CAFile))
	if len(after) != 1 || !after[0].Equal(bundle[0]) {
		t.Fatalf("ca.crt holds %d certificates after retiring, want the new CA only", len(after))
	}
	if trustedBy(oldLeaf, after, rotT0) == nil {
		t.Fatal("a leaf of the retired CA is still trusted")
	}
	for _, f := range []string{"node1.crt", "client.crt"} {
		if err := trustedBy(pemCert(t, filepath.Join(dir, f)), after, rotT0); err != nil {
			t.Fatalf("reissued %s not trusted: %v", f, err)
		}
	}

	// Nothing left to retire: an empty list, nothing written.
	before = mustRead(t, filepath.Join(dir, CAFile))
	if again, err := RetireCAs(dir, false); err != nil || again == nil || len(again) != 0 {
		t.Fatalf("second retire: %v %v, want an empty list", again, err)
	}
	if !bytes.Equal(mustRead(t, filepath.Join(dir, CAFile)), before) {
		t.Fatal("retiring nothing changed ca.crt")
	}
}

func TestRetireCAsForce(t *testing.T) {
	dir := mustRotDir(t, issue("node1", 1))
	oldLeaf := pemCert(t, filepath.Join(dir, "node1.crt"))
	if _, err := RotateCA(dir, CertOptions{Now: at(rotT0.Add(time.Hour))}); err != nil {
		t.Fatal(err)
	}
	bundle := pemCerts(t, filepath.Join(dir, CAFile))
	if err := trustedBy(oldLeaf, bundle, rotT0); err != nil {
		t.Fatalf("before retiring: %v", err)
	}
	retired, err := RetireCAs(dir, true)
	if err != nil || len(retired) != 1 || retired[0].Name != bundle[1].Subject.CommonName {
		t.Fatalf("forced retire: %+v %v", retired, err)
	}
	after := pemCerts(t, filepath.Join(dir, CAFile))
	if len(after) != 1 || !after[0].Equal(bundle[0]) {
		t.Fatalf("ca.crt holds %d certificates after a forced retire, want the new CA only", len(after))
	}
	if trustedBy(oldLeaf, after, rotT0) == nil {
		t.Fatal("the old leaf still verifies after its CA was retired")
	}
}
