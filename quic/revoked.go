package quic

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// RevokedFile lists the certificates a TLS directory's endpoints refuse
// although the cluster CA signed them (a leaked key, a departed operator):
// one serial number a line, in hexadecimal (either case; colons and a 0x
// prefix allowed, so `cert list` and openssl output can be pasted), then
// optionally a comment after '#'. Blank lines and lines starting with '#'
// are skipped. The file is optional; like ca.crt it is read again at every
// TLS reload (--tls-reload-interval, SIGHUP), and a line that does not
// parse makes the reload refused (the endpoint keeps its previous state),
// never a list silently shorter. Connections already up with a certificate
// it lists are closed at the reload that adds it.
const RevokedFile = "revoked.txt"

// maxRevokedBytes bounds the file (some 100 000 entries with comments).
const maxRevokedBytes = 8 << 20

// revokedSet holds revoked serials, keyed by serialKey.
type revokedSet map[string]struct{}

// serialKey is a serial number's key in a revokedSet.
func serialKey(n *big.Int) string { return n.Text(16) }

// refusePeer is the error for a connection whose peer presented a listed
// certificate (nil when it did not): handshakes fail with it, and a
// reload that lists it closes the connection.
func (s revokedSet) refusePeer(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 || !s.has(cs.PeerCertificates[0]) {
		return nil
	}
	c := cs.PeerCertificates[0]
	return fmt.Errorf("quic: certificate serial %s (%q) is revoked (%s)", serialKey(c.SerialNumber), c.Subject.CommonName, RevokedFile)
}

// logOwnRevoked logs an error when st's own certificate is listed: its
// peers refuse it.
func logOwnRevoked(log *slog.Logger, st *tlsState) {
	if st.revoked.has(st.leaf) {
		log.Error("quic: TLS: this endpoint's own certificate is listed in "+RevokedFile+": its peers refuse it; issue a new one",
			"name", st.leaf.Subject.CommonName, "serial", serialKey(st.leaf.SerialNumber))
	}
}

// has reports whether c is revoked.
func (s revokedSet) has(c *x509.Certificate) bool {
	if len(s) == 0 || c == nil || c.SerialNumber == nil {
		return false
	}
	_, ok := s[serialKey(c.SerialNumber)]
	return ok
}

// readRevoked reads dir's RevokedFile; a missing file is an empty list.
func readRevoked(dir string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(dir, RevokedFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("quic: read %s: %w", RevokedFile, err)
	case len(b) > maxRevokedBytes:
		return nil, fmt.Errorf("quic: %s: %d bytes, more than %d", RevokedFile, len(b), maxRevokedBytes)
	}
	return b, nil
}

// parseRevoked parses the RevokedFile format.
func parseRevoked(b []byte) (revokedSet, error) {
	set := revokedSet{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, maxRevokedBytes)
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		n, err := ParseSerial(text)
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", RevokedFile, line, err)
		}
		set[serialKey(n)] = struct{}{}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", RevokedFile, err)
	}
	return set, nil
}

// ParseSerial reads a certificate serial number in hexadecimal: any case,
// an optional 0x prefix, optional colons between bytes.
func ParseSerial(s string) (*big.Int, error) {
	h := strings.ReplaceAll(strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(s), "0x"), "0X"), ":", "")
	n, ok := new(big.Int).SetString(h, 16)
	if !ok || h == "" || n.Sign() <= 0 || len(h) > 64 {
		return nil, fmt.Errorf("serial %.80q: not a positive hexadecimal number of at most 32 bytes", s)
	}
	return n, nil
}

// RevokeCert adds serial to dir's RevokedFile, with comment (one line) and
// the time, replacing the file atomically; already reports that it was
// listed (the file is then left as it is). Endpoints that use dir refuse
// the certificate from their next TLS reload on.
func RevokeCert(dir string, serial *big.Int, comment string, now time.Time) (already bool, err error) {
	old, err := readRevoked(dir)
	if err != nil {
		return false, err
	}
	set, err := parseRevoked(old)
	if err != nil {
		return false, fmt.Errorf("quic: %w (fix the file first)", err)
	}
	if _, ok := set[serialKey(serial)]; ok {
		return true, nil
	}
	var b bytes.Buffer
	b.Write(old)
	if len(old) > 0 && old[len(old)-1] != '\n' {
		b.WriteByte('\n')
	}
	comment = strings.Join(strings.Fields(comment), " ")
	fmt.Fprintf(&b, "%s # revoked %s", serialKey(serial), now.UTC().Format(time.RFC3339))
	if comment != "" {
		fmt.Fprintf(&b, ": %s", comment)
	}
	b.WriteByte('\n')
	return false, writeFileAtomic(filepath.Join(dir, RevokedFile), b.Bytes(), 0o644)
}

// ReadCert parses dir/NAME.crt, the certificate `cert revoke --name`
// revokes.
func ReadCert(dir, name string) (*x509.Certificate, error) {
	return readCertFile(dir, name+".crt")
}

// RevokedSerials returns the serials dir's RevokedFile lists (lowercase
// hex, as big.Int.Text(16) spells them).
func RevokedSerials(dir string) (map[string]bool, error) {
	b, err := readRevoked(dir)
	if err != nil {
		return nil, err
	}
	set, err := parseRevoked(b)
	if err != nil {
		return nil, fmt.Errorf("quic: %w", err)
	}
	out := make(map[string]bool, len(set))
	for k := range set {
		out[k] = true
	}
	return out, nil
}
