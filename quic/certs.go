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
// CA unless opts.Force.
func InitCA(dir string, opts CertOptions) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("quic: create TLS directory: %w", err)
	}
	if err := checkAbsent(opts.Force, filepath.Join(dir, CAFile), filepath.Join(dir, CAKeyFile)); err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	validity := opts.Validity
	if validity <= 0 {
		validity = DefaultCAValidity
	}
	now := opts.now()
	tmpl := &x509.Certificate{
		SerialNumber:          randomSerial(),
		Subject:               pkix.Name{CommonName: "paymentlog cluster CA", Organization: []string{"paymentlog"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("quic: create CA certificate: %w", err)
	}
	return writePair(dir, "ca", der, key)
}

var certNameRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// IssueCert issues <name>.crt and <name>.key in dir, signed by the CA there.
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
	caCert, caKey, err := loadCA(dir)
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
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("quic: issue certificate %s: %w", name, err)
	}
	return writePair(dir, name, der, key)
}

func loadCA(dir string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, CAFile))
	if err != nil {
		return nil, nil, fmt.Errorf("quic: read CA certificate (run `paymentlog cert init` first): %w", err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, CAKeyFile))
	if err != nil {
		return nil, nil, fmt.Errorf("quic: read CA key: %w", err)
	}
	cb, _ := pem.Decode(certPEM)
	if cb == nil || cb.Type != "CERTIFICATE" {
		return nil, nil, fmt.Errorf("quic: %s: no PEM certificate", filepath.Join(dir, CAFile))
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("quic: %s: %w", filepath.Join(dir, CAFile), err)
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, nil, fmt.Errorf("quic: %s: no PEM key", filepath.Join(dir, CAKeyFile))
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("quic: %s: %w", filepath.Join(dir, CAKeyFile), err)
	}
	key, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, nil, fmt.Errorf("quic: %s: not an ECDSA key", filepath.Join(dir, CAKeyFile))
	}
	if !cert.IsCA {
		return nil, nil, fmt.Errorf("quic: %s is not a CA certificate", filepath.Join(dir, CAFile))
	}
	return cert, key, nil
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
	return nil
}
