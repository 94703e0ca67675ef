package quic

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// Rotating the cluster CA without downtime
//
// ca.crt is a trust bundle: endpoints trust every CA certificate it holds,
// while ca.key is the key of one of them, the current CA, which issues.
// An operator rotates in four steps:
//
//  1. RotateCA (`paymentlog cert rotate-ca`): a new current CA, trusted
//     alongside the old ones.
//  2. Every node and client reloads ca.crt: each now trusts both CAs.
//  3. Every certificate is reissued (`paymentlog cert issue --force`) by the
//     new CA and reloaded by its holder.
//  4. RetireCAs (`paymentlog cert retire-ca`): ca.crt trusts the new CA only;
//     it refuses while a certificate in the directory still needs an old one.
//
// ListCerts (`paymentlog cert list`) shows where each certificate stands.

// writeCAFile writes ca.crt and ca.key for RotateCA and RetireCAs. Tests
// replace it to fail a write, as a crash between two writes would.
var writeCAFile = writeFileAtomic

// RotateCA makes a new cluster CA in dir, which must hold one already (see
// InitCA): a new key and self-signed certificate, with InitCA's properties,
// valid for opts.Validity (DefaultCAValidity when zero) and named after
// opts.Now in UTC ("paymentlog cluster CA 2026-12-02 15:50:04") so CAs can be
// told apart. opts.Force and opts.NodeID are ignored.
//
// It writes, each atomically and in this order:
//
//  1. ca.crt: the new CA certificate, then every certificate the old ca.crt
//     held (each once), so endpoints that reload it trust old and new;
//  2. ca.key: the new CA's key.
//
// A crash between the two leaves the old key with a ca.crt that still holds
// its certificate: the directory keeps issuing with the old CA, and running
// RotateCA again finishes the rotation (the orphaned new CA stays trusted
// until RetireCAs).
//
// It returns the new CA's description (File ca.crt, CurrentCA).
func RotateCA(dir string, opts CertOptions) (CertInfo, error) {
	old, err := loadCA(dir)
	if err != nil {
		return CertInfo{}, err
	}
	now := opts.now()
	der, key, err := newCA("paymentlog cluster CA "+now.UTC().Format(time.DateTime), opts)
	if err != nil {
		return CertInfo{}, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return CertInfo{}, fmt.Errorf("quic: parse new CA certificate: %w", err)
	}
	bundle := []*x509.Certificate{cert}
	for _, c := range old.bundle {
		if !containsCert(bundle, c) {
			bundle = append(bundle, c)
		}
	}
	if err := writeCAFile(filepath.Join(dir, CAFile), encodeCerts(bundle...), 0o644); err != nil {
		return CertInfo{}, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return CertInfo{}, err
	}
	if err := writeCAFile(filepath.Join(dir, CAKeyFile), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		return CertInfo{}, fmt.Errorf("%w (%s trusts the new CA but ca.key is still the old one's: run rotate-ca again)", err, CAFile)
	}
	info := describeCert(CAFile, cert, now)
	info.CurrentCA = true
	return info, nil
}

// RetireCAs rewrites dir's ca.crt to hold only the current CA (the one whose
// key is ca.key) and returns the CAs it removed, in ca.crt's order. With
// nothing to retire it changes nothing and returns an empty list.
//
// Unless force, it first checks every other certificate file in dir (*.crt
// besides ca.crt): when one is not signed by the current CA (or does not
// parse) it changes nothing and returns a *CAInUseError naming each, since
// whoever presents such a certificate would be locked out once the nodes
// reload ca.crt.
func RetireCAs(dir string, force bool) ([]CertInfo, error) {
	ca, err := loadCA(dir)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	retired := []CertInfo{}
	for _, c := range ca.bundle {
		if !c.Equal(ca.cert) {
			retired = append(retired, describeCert(CAFile, c, now))
		}
	}
	if len(retired) == 0 {
		return retired, nil
	}
	if !force {
		stale, err := staleCerts(dir, ca.cert)
		if err != nil {
			return nil, err
		}
		if len(stale) > 0 {
			return nil, &CAInUseError{Dir: dir, Certs: stale}
		}
	}
	if err := writeCAFile(filepath.Join(dir, CAFile), encodeCerts(ca.cert), 0o644); err != nil {
		return nil, err
	}
	return retired, nil
}

// CAInUseError is RetireCAs' refusal: certificate files in Dir that the
// current CA did not sign, in name order.
type CAInUseError struct {
	Dir   string
	Certs []StaleCert
}

// StaleCert is a certificate file the current CA did not sign.
type StaleCert struct {
	File   string // base name, e.g. node1.crt
	Reason string // e.g. "node certificate for node 1, signed by paymentlog cluster CA"
	Fix    string // the command that reissues it with the current CA; "" for a file that does not parse
}

func (e *CAInUseError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "quic: refusing to retire CAs: %d certificate(s) in %s are not signed by the current CA, "+
		"and whoever presents one would be locked out once the nodes reload %s:", len(e.Certs), e.Dir, CAFile)
	for i, s := range e.Certs {
		if i > 0 {
			b.WriteString(";")
		}
		fmt.Fprintf(&b, " %s (%s", s.File, s.Reason)
		if s.Fix != "" {
			fmt.Fprintf(&b, "; reissue: `%s`", s.Fix)
		}
		b.WriteString(")")
	}
	b.WriteString(". Reissue each with `paymentlog cert issue --force` first and let its holder reload it " +
		"(remove a file nobody uses), or retire anyway with --force")
	return b.String()
}

// staleCerts lists the certificate files in dir (besides ca.crt) that ca did
// not sign.
func staleCerts(dir string, ca *x509.Certificate) ([]StaleCert, error) {
	files, err := certFiles(dir)
	if err != nil {
		return nil, err
	}
	var stale []StaleCert
	for _, f := range files {
		c, err := readCertFile(dir, f)
		switch {
		case err != nil:
			stale = append(stale, StaleCert{File: f, Reason: "does not parse: " + err.Error()})
		case !signedBy(c, ca):
			stale = append(stale, StaleCert{File: f, Reason: fmt.Sprintf("%s, signed by %s", IdentityOf(c), c.Issuer.CommonName),
				Fix: reissueCommand(dir, f, c)})
		}
	}
	return stale, nil
}

// reissueCommand is the `paymentlog cert issue` that reissues c (file f)
// with the same name, role and hosts.
func reissueCommand(dir, f string, c *x509.Certificate) string {
	cmd := fmt.Sprintf("paymentlog cert issue --dir %s --name %s", dir, strings.TrimSuffix(f, ".crt"))
	if id := IdentityOf(c); id.Role == RoleNode {
		cmd += fmt.Sprintf(" --node-id %d", id.NodeID)
	}
	var hosts []string
	for _, ip := range c.IPAddresses {
		hosts = append(hosts, ip.String())
	}
	hosts = append(hosts, c.DNSNames...)
	if len(hosts) > 0 {
		cmd += " --host " + strings.Join(hosts, ",")
	}
	return cmd + " --force"
}

// signedBy reports whether ca issued c: c names ca as its issuer and ca's
// key verifies c's signature.
func signedBy(c, ca *x509.Certificate) bool {
	return ca != nil && bytes.Equal(c.RawIssuer, ca.RawSubject) && c.CheckSignatureFrom(ca) == nil
}

func containsCert(certs []*x509.Certificate, c *x509.Certificate) bool {
	for _, have := range certs {
		if have.Equal(c) {
			return true
		}
	}
	return false
}
