package quic

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// File names in a TLS directory.
const (
	CAFile    = "ca.crt"
	CAKeyFile = "ca.key"
)

// Default certificate lifetimes.
const (
	DefaultCAValidity   = 10 * 365 * 24 * time.Hour
	DefaultCertValidity = 5 * 365 * 24 * time.Hour
)

// ErrExists is returned by InitCA and IssueCert instead of overwriting a key.
var ErrExists = errors.New("quic: refusing to overwrite an existing file (--force overwrites)")

// CertOptions tunes InitCA and IssueCert. Zero values take defaults.
type CertOptions struct {
	Validity time.Duration // DefaultCAValidity / DefaultCertValidity
	Force    bool          // overwrite existing files
	Now      func() time.Time
	// NodeID > 0 makes IssueCert issue a node certificate for that node id;
	// 0 (the default) a client certificate. See Role for the format.
	NodeID int32
}

func (o CertOptions) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// InitCA creates a cluster CA in dir: an ECDSA P-256 key (ca.key, mode 0600)
// and a self-signed certificate (ca.crt). It refuses to overwrite an existing
// CA unless opts.Force; forced, dir holds a fresh single-CA ca.crt (any CA
// the old one trusted, rotated or not, is gone).
func InitCA(dir string, opts CertOptions) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("quic: create TLS directory: %w", err)
	}
	if err := checkAbsent(opts.Force, filepath.Join(dir, CAFile), filepath.Join(dir, CAKeyFile)); err != nil {
		return err
	}
	der, key, err := newCA("paymentlog cluster CA", opts)
	if err != nil {
		return err
	}
	return writePair(dir, "ca", der, key)
}

// newCA makes a CA key and its self-signed certificate (DER) with common
// name cn, valid from an hour before opts.now() for opts.Validity
// (DefaultCAValidity when zero).
func newCA(cn string, opts CertOptions) ([]byte, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	validity := opts.Validity
	if validity <= 0 {
		validity = DefaultCAValidity
	}
	now := opts.now()
	tmpl := &x509.Certificate{
		SerialNumber:          randomSerial(),
		Subject:               pkix.Name{CommonName: cn, Organization: []string{"paymentlog"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("quic: create CA certificate: %w", err)
	}
	return der, key, nil
}

var certNameRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// IssueCert issues <name>.crt and <name>.key in dir, signed by the CA there:
// the one in ca.crt whose key is ca.key (after RotateCA, the new CA).
// The certificate is valid both as a server and as a client certificate
// (mutual TLS), with common name name and the given hosts (IP addresses or
// DNS names) as subject alternative names. It carries a role (see Role): a
// node certificate for opts.NodeID when that is positive, else a client
// certificate.
func IssueCert(dir, name string, hosts []string, opts CertOptions) error {
	if !certNameRE.MatchString(name) || name == "ca" || strings.HasPrefix(name, ".") {
		return fmt.Errorf("%w: %q", errNoTLSName, name)
	}
	if opts.NodeID < 0 {
		return fmt.Errorf("quic: node id must be positive, got %d", opts.NodeID)
	}
	ca, err := loadCA(dir)
	if err != nil {
		return err
	}
	if err := checkAbsent(opts.Force, filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")); err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	validity := opts.Validity
	if validity <= 0 {
		validity = DefaultCertValidity
	}
	now := opts.now()
	tmpl := &x509.Certificate{
		SerialNumber: randomSerial(),
		Subject:      pkix.Name{CommonName: name, Organization: []string{"paymentlog"}, OrganizationalUnit: []string{ouClient}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	if opts.NodeID > 0 {
		tmpl.Subject.OrganizationalUnit = []string{ouNode}
		tmpl.URIs = []*url.URL{NodeURI(opts.NodeID)}
	}
	for _, h := range hosts {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return fmt.Errorf("quic: issue certificate %s: %w", name, err)
	}
	return writePair(dir, name, der, key)
}

// issuingCA is a TLS directory's CA material.
type issuingCA struct {
	bundle []*x509.Certificate // every certificate in ca.crt, in file order (the trust bundle)
	cert   *x509.Certificate   // the CA certificate in bundle whose key is key
	key    *ecdsa.PrivateKey   // ca.key
}

// loadCA reads ca.crt and ca.key and picks, among ca.crt's certificates, the
// CA certificate of ca.key. ca.crt may hold several CAs (see RotateCA), in
// any order: the first one is not necessarily ca.key's.
func loadCA(dir string) (issuingCA, error) {
	bundle, err := readCABundle(dir)
	if err != nil {
		return issuingCA{}, err
	}
	key, err := readCAKey(dir)
	if err != nil {
		return issuingCA{}, err
	}
	cert := matchingCA(bundle, key)
	if cert == nil {
		return issuingCA{}, fmt.Errorf("quic: %s is the key of none of the %d certificate(s) in %s: "+
			"restore the ca.key that goes with ca.crt (`paymentlog cert list --dir %s` shows the CAs ca.crt holds)",
			filepath.Join(dir, CAKeyFile), len(bundle), filepath.Join(dir, CAFile), dir)
	}
	return issuingCA{bundle: bundle, cert: cert, key: key}, nil
}

// readCABundle parses every PEM certificate in dir's ca.crt.
func readCABundle(dir string) ([]*x509.Certificate, error) {
	path := filepath.Join(dir, CAFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("quic: read CA certificate (run `paymentlog cert init` first): %w", err)
	}
	certs, err := parseCertsPEM(b)
	if err != nil {
		return nil, fmt.Errorf("quic: %s: %w", path, err)
	}
	return certs, nil
}

// parseCertsPEM parses every CERTIFICATE block of a PEM file (other blocks
// are skipped); it needs at least one.
func parseCertsPEM(rest []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", len(certs)+1, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no PEM certificate")
	}
	return certs, nil
}

// readCAKey parses dir's ca.key.
func readCAKey(dir string) (*ecdsa.PrivateKey, error) {
	path := filepath.Join(dir, CAKeyFile)
	keyPEM, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("quic: read CA key: %w", err)
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, fmt.Errorf("quic: %s: no PEM key", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("quic: %s: %w", path, err)
	}
	key, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("quic: %s: not an ECDSA key", path)
	}
	return key, nil
}

// matchingCA is the first CA certificate in bundle whose public key is
// key's, or nil.
func matchingCA(bundle []*x509.Certificate, key *ecdsa.PrivateKey) *x509.Certificate {
	for _, c := range bundle {
		if isKeyOf(c, key) {
			return c
		}
	}
	return nil
}

// isKeyOf reports whether key is the key of CA certificate c.
func isKeyOf(c *x509.Certificate, key *ecdsa.PrivateKey) bool {
	pub, ok := c.PublicKey.(*ecdsa.PublicKey)
	return ok && key != nil && c.IsCA && pub.Equal(&key.PublicKey)
}

// encodeCerts PEM-encodes certs, in order.
func encodeCerts(certs ...*x509.Certificate) []byte {
	var out []byte
	for _, c := range certs {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
	}
	return out
}

func checkAbsent(force bool, paths ...string) error {
	if force {
		return nil
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			return fmt.Errorf("%w: %s", ErrExists, p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// writePair writes name.crt (0644) and name.key (0600) atomically.
func writePair(dir, name string, der []byte, key *ecdsa.PrivateKey) error {
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(dir, name+".key"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, name+".crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

// writeFileAtomic replaces path with data: a reader sees the old file or the
// new one, never a mix. On return the rename is synced, so two calls are
// ordered on disk as they are in the program (RotateCA counts on it).
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err != nil {
		return fmt.Errorf("quic: write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("quic: write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("quic: write %s: %w", path, err)
	}
	return syncDir(filepath.Dir(path))
}

// syncDir makes the renames in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("quic: sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("quic: sync %s: %w", dir, err)
	}
	return nil
}
