package quic

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// tlsState is one load of a TLS directory: the configurations handshakes use
// until the next reload (see tlsreload.go), and what was loaded.
type tlsState struct {
	server *tls.Config
	client *tls.Config
	// leaf is the endpoint's own certificate; issuer the CA of the bundle
	// that signed it, or nil and verifyErr why the leaf does not verify
	// against the bundle (which only the first load tolerates).
	leaf      *x509.Certificate
	issuer    *x509.Certificate
	verifyErr error
	pool      *x509.CertPool
	cas       int // CA certificates in the bundle
	// revoked are the serials RevokedFile lists: refused in handshakes,
	// and their connections closed when a reload adds them.
	revoked revokedSet
	// digest covers the three files' contents: a reload that finds the same
	// digest changes nothing.
	digest        [sha256.Size]byte
	caDigest      [sha256.Size]byte // ca.crt's alone
	revokedDigest [sha256.Size]byte // revoked.txt's alone
	loadedAt      time.Time
}

// tlsFiles are the contents of a TLS directory's files for one name: the
// three every endpoint needs and the optional RevokedFile.
type tlsFiles struct {
	ca, cert, key, revoked []byte
}

func readTLSFiles(cfg TLSConfig) (tlsFiles, error) {
	var f tlsFiles
	var err error
	if f.ca, err = os.ReadFile(filepath.Join(cfg.Dir, CAFile)); err != nil {
		return f, fmt.Errorf("quic: read cluster CA: %w", err)
	}
	if f.cert, err = os.ReadFile(filepath.Join(cfg.Dir, cfg.Name+".crt")); err != nil {
		return f, fmt.Errorf("quic: load certificate %s: %w", cfg.Name, err)
	}
	if f.key, err = os.ReadFile(filepath.Join(cfg.Dir, cfg.Name+".key")); err != nil {
		return f, fmt.Errorf("quic: read %s: %w", filepath.Join(cfg.Dir, cfg.Name+".key"), err)
	}
	f.revoked, err = readRevoked(cfg.Dir)
	return f, err
}

func (f tlsFiles) digest() [sha256.Size]byte {
	h := sha256.New()
	for _, b := range [][]byte{f.ca, f.cert, f.key, f.revoked} {
		fmt.Fprintf(h, "%d:", len(b))
		h.Write(b)
	}
	var d [sha256.Size]byte
	h.Sum(d[:0])
	return d
}

// buildTLSState parses files into the configurations an endpoint serves and
// dials with. It checks that the key matches the certificate; whether the
// certificate verifies against the bundle is the caller's to judge (issuer is
// nil and verifyErr set when it does not).
func buildTLSState(cfg TLSConfig, f tlsFiles, now time.Time) (*tlsState, error) {
	pool := x509.NewCertPool()
	cas, err := parseCABundle(f.ca)
	if err != nil {
		return nil, fmt.Errorf("quic: %s: %w", filepath.Join(cfg.Dir, CAFile), err)
	}
	for _, ca := range cas {
		pool.AddCert(ca)
	}
	cert, err := tls.X509KeyPair(f.cert, f.key)
	if err != nil {
		return nil, fmt.Errorf("quic: load certificate %s: %w", cfg.Name, err)
	}
	leaf := cert.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, fmt.Errorf("quic: load certificate %s: %w", cfg.Name, err)
		}
	}
	revoked, err := parseRevoked(f.revoked)
	if err != nil {
		return nil, fmt.Errorf("quic: %s: %w", cfg.Dir, err)
	}
	refuseRevoked := revoked.refusePeer
	st := &tlsState{
		server: &tls.Config{
			MinVersion:       tls.VersionTLS13,
			NextProtos:       []string{ALPN},
			Certificates:     []tls.Certificate{cert},
			ClientAuth:       tls.RequireAndVerifyClientCert,
			ClientCAs:        pool,
			VerifyConnection: refuseRevoked,
		},
		client: &tls.Config{
			MinVersion:       tls.VersionTLS13,
			NextProtos:       []string{ALPN},
			Certificates:     []tls.Certificate{cert},
			RootCAs:          pool,
			VerifyConnection: refuseRevoked,
		},
		leaf:          leaf,
		pool:          pool,
		cas:           len(cas),
		revoked:       revoked,
		digest:        f.digest(),
		caDigest:      sha256.Sum256(f.ca),
		revokedDigest: sha256.Sum256(f.revoked),
		loadedAt:      now,
	}
	chains, err := verifyLeaf(leaf, pool, now)
	if err != nil {
		st.verifyErr = err
	} else {
		st.issuer = chains[0][len(chains[0])-1]
	}
	return st, nil
}

// parseCABundle returns every certificate in a PEM bundle; it needs at least
// one and refuses a certificate that is not a CA.
func parseCABundle(b []byte) ([]*x509.Certificate, error) {
	cas, err := parseCertsPEM(b)
	if err != nil {
		return nil, err
	}
	for _, c := range cas {
		if !c.IsCA {
			return nil, fmt.Errorf("%q is not a CA certificate", c.Subject.CommonName)
		}
	}
	return cas, nil
}

// verifyLeaf verifies leaf against pool for either usage (every paymentlog
// certificate is both a server and a client certificate).
func verifyLeaf(leaf *x509.Certificate, pool *x509.CertPool, now time.Time) ([][]*x509.Certificate, error) {
	return leaf.Verify(x509.VerifyOptions{
		Roots:       pool,
		CurrentTime: now,
		KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
	})
}

// checkReload says why next may not replace cur, or nil. A reload must keep
// the endpoint's identity (its peers authorize it by that), and its
// certificate must verify against its own new bundle now: a certificate its
// peers would refuse, or one already expired, is kept out, and the endpoint
// goes on with the one it has.
func checkReload(cur, next *tlsState) error {
	if next.verifyErr != nil {
		return fmt.Errorf("the new certificate does not verify against the new %s: %w", CAFile, next.verifyErr)
	}
	if cur == nil || cur.leaf == nil {
		return nil
	}
	was, is := IdentityOf(cur.leaf), IdentityOf(next.leaf)
	if was != is || cur.leaf.Subject.CommonName != next.leaf.Subject.CommonName {
		return fmt.Errorf("the new certificate (%q) is a %s, the running one (%q) a %s: a reload keeps the identity (restart to change it)",
			next.leaf.Subject.CommonName, is, cur.leaf.Subject.CommonName, was)
	}
	return nil
}
