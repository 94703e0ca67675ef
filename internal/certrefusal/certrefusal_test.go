package certrefusal

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"testing"
	"time"
)

// mustCert makes a certificate from tmpl, signed by parent (nil: self
// signed), and its key.
func mustCert(t *testing.T, tmpl *x509.Certificate, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c, key
}

// TestReason verifies certificates that fail for each reason, as
// x509.Certificate.Verify fails (so the table holds Reason to the errors
// x509 really returns), and checks the reason of the error as returned,
// as crypto/tls wraps it, and wrapped once more.
func TestReason(t *testing.T) {
	now := time.Now()
	ca := func(name string) (*x509.Certificate, *ecdsa.PrivateKey) {
		return mustCert(t, &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
			KeyUsage: x509.KeyUsageCertSign}, nil, nil)
	}
	caCert, caKey := ca("ca")
	otherCA, _ := ca("other ca")
	leaf := func(notBefore, notAfter time.Time, usage x509.ExtKeyUsage) *x509.Certificate {
		c, _ := mustCert(t, &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "node1"},
			DNSNames: []string{"node1"}, NotBefore: notBefore, NotAfter: notAfter,
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}, caCert, caKey)
		return c
	}
	valid := leaf(now.Add(-time.Hour), now.Add(time.Hour), x509.ExtKeyUsageServerAuth)
	pool := func(c *x509.Certificate) *x509.CertPool {
		p := x509.NewCertPool()
		p.AddCert(c)
		return p
	}
	verify := func(c *x509.Certificate, roots *x509.CertPool, name string) error {
		_, err := c.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, CurrentTime: now,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		if err == nil {
			t.Fatalf("%s verified", c.Subject.CommonName)
		}
		return err
	}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"another CA's", verify(valid, pool(otherCA), "node1"), UnknownCA},
		{"expired", verify(leaf(now.Add(-2*time.Hour), now.Add(-time.Hour), x509.ExtKeyUsageServerAuth), pool(caCert), "node1"), Expired},
		{"not yet valid", verify(leaf(now.Add(time.Hour), now.Add(2*time.Hour), x509.ExtKeyUsageServerAuth), pool(caCert), "node1"), NotYetValid},
		{"client certificate for a server", verify(leaf(now.Add(-time.Hour), now.Add(time.Hour), x509.ExtKeyUsageClientAuth), pool(caCert), "node1"), BadUsage},
		{"another host's", verify(valid, pool(caCert), "node2"), NameMismatch},
		{"leaf as its own CA", x509.CertificateInvalidError{Cert: valid, Reason: x509.NotAuthorizedToSign}, BadCertificate},
		{"no x509 error", errors.New("tls: failed to parse certificate"), BadCertificate},
	} {
		for _, err := range []error{tc.err, &tls.CertificateVerificationError{Err: tc.err}, fmt.Errorf("dial: %w", tc.err)} {
			if got := Reason(err, now); got != tc.want {
				t.Errorf("%s: Reason(%v) = %s, want %s", tc.name, err, got, tc.want)
			}
		}
	}
}
