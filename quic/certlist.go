package quic

import (
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"
)

// CertInfo describes one certificate of a TLS directory (see ListCerts).
type CertInfo struct {
	// File is the certificate's file, relative to the directory: ca.crt
	// for every CA of the trust bundle.
	File string `json:"file"`
	// Name is the subject common name (the NAME of `cert issue`).
	Name string `json:"name,omitempty"`
	// Role is "ca" for a CA certificate, else the role it carries (see
	// Role): "node", "client" or "none" (an older build's certificate).
	Role   string `json:"role,omitempty"`
	NodeID int32  `json:"node_id,omitempty"` // node certificates: the node id
	Serial string `json:"serial,omitempty"`  // serial number: lowercase hex, whole bytes (as openssl, which writes upper case)
	Issuer string `json:"issuer,omitempty"`  // issuer common name
	// NotBefore and NotAfter bound the validity, in UTC.
	NotBefore time.Time `json:"not_before"`
	NotAfter  time.Time `json:"not_after"`
	// Expired: NotAfter is before the time the description was made at
	// (ListCerts' now). ExpiresIn measures from any time.
	Expired bool `json:"expired"`
	// CurrentCA: a CA certificate in ca.crt whose key is ca.key, the CA
	// that issues. The other CAs of ca.crt are retiring (see RetireCAs).
	CurrentCA bool `json:"current_ca"`
	// SignedByCurrentCA (leaves only): issued by the current CA. False for
	// every leaf when the directory has no usable ca.key (a node's).
	SignedByCurrentCA bool `json:"signed_by_current_ca"`
	// Trusted (leaves only): verifies against every CA of ca.crt at
	// ListCerts' now, for server or client authentication: endpoints that
	// loaded this ca.crt accept it.
	Trusted bool `json:"trusted"`
	// Revoked (leaves only): its serial is in the directory's RevokedFile,
	// so endpoints that use the directory refuse it.
	Revoked bool `json:"revoked"`
	// Error says why the file could not be read; the other fields are then
	// zero but File.
	Error string `json:"error,omitempty"`
}

// ExpiresIn is the time left from now until NotAfter, negative once expired.
func (c CertInfo) ExpiresIn(now time.Time) time.Duration {
	return c.NotAfter.Sub(now)
}

// RoleCA is CertInfo.Role for a CA certificate.
const RoleCA = "ca"

// ListCerts describes every certificate in dir as of now: each one in ca.crt,
// in file order, then each other *.crt file in name order. A file that does
// not parse is described by an entry with Error set, as is (after the CAs)
// a ca.key that is the key of no CA in ca.crt. A missing ca.key (a node's
// directory) is not an error, but then no CA is current. ListCerts fails
// only when dir cannot be read.
func ListCerts(dir string, now time.Time) ([]CertInfo, error) {
	files, err := certFiles(dir)
	if err != nil {
		return nil, err
	}
	out := []CertInfo{}
	pool := x509.NewCertPool()
	bundle, err := readCABundle(dir)
	if err != nil {
		out = append(out, CertInfo{File: CAFile, Error: err.Error()})
	}
	key, keyErr := readCAKey(dir)
	for _, c := range bundle {
		pool.AddCert(c)
		info := describeCert(CAFile, c, now)
		info.CurrentCA = isKeyOf(c, key)
		out = append(out, info)
	}
	current := matchingCA(bundle, key)
	revoked, revErr := RevokedSerials(dir)
	if revErr != nil {
		out = append(out, CertInfo{File: RevokedFile, Error: revErr.Error()})
	}
	switch {
	case keyErr != nil && !errors.Is(keyErr, fs.ErrNotExist):
		out = append(out, CertInfo{File: CAKeyFile, Error: keyErr.Error()})
	case keyErr == nil && current == nil && len(bundle) > 0:
		out = append(out, CertInfo{File: CAKeyFile, Error: fmt.Sprintf("quic: %s is the key of none of the certificates in %s", CAKeyFile, CAFile)})
	}
	for _, f := range files {
		c, err := readCertFile(dir, f)
		if err != nil {
			out = append(out, CertInfo{File: f, Error: err.Error()})
			continue
		}
		info := describeCert(f, c, now)
		info.SignedByCurrentCA = signedBy(c, current)
		_, err = c.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}})
		info.Trusted = err == nil
		info.Revoked = revoked[serialKey(c.SerialNumber)]
		out = append(out, info)
	}
	return out, nil
}

// describeCert is c's description as file, at now, without the fields that
// depend on the rest of the directory.
func describeCert(file string, c *x509.Certificate, now time.Time) CertInfo {
	info := CertInfo{
		File:      file,
		Name:      c.Subject.CommonName,
		Role:      RoleCA,
		Serial:    hex.EncodeToString(c.SerialNumber.Bytes()),
		Issuer:    c.Issuer.CommonName,
		NotBefore: c.NotBefore.UTC(),
		NotAfter:  c.NotAfter.UTC(),
		Expired:   now.After(c.NotAfter),
	}
	if !c.IsCA {
		id := IdentityOf(c)
		info.Role, info.NodeID = id.Role.String(), id.NodeID
	}
	return info
}

// certFiles lists the certificate files in dir besides ca.crt (*.crt, not
// hidden), in name order.
func certFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("quic: read TLS directory: %w", err)
	}
	var files []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || n == CAFile || !strings.HasSuffix(n, ".crt") || strings.HasPrefix(n, ".") {
			continue
		}
		files = append(files, n)
	}
	return files, nil
}

// readCertFile parses the first certificate in dir/file.
func readCertFile(dir, file string) (*x509.Certificate, error) {
	return loadLeaf(TLSConfig{Dir: dir, Name: strings.TrimSuffix(file, ".crt")})
}
