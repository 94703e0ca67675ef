package quic

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"sync"
	"time"
)

// TLSConfig says how to authenticate. A zero Dir means dev mode: an ephemeral
// self-signed certificate, no verification, one loud warning.
type TLSConfig struct {
	Dir  string // holds ca.crt, <Name>.crt, <Name>.key (from `paymentlog cert`)
	Name string // certificate name, e.g. "node1" or "client"
}

// Dev reports whether c is dev mode (no certificate directory).
func (c TLSConfig) Dev() bool { return c.Dir == "" }

// tlsMaterial is what an endpoint needs to build its tls.Configs.
type tlsMaterial struct {
	server *tls.Config
	client *tls.Config
	// resetSeed is secret, stable material from which the stateless reset key
	// is derived (the node key), or nil when none is stable.
	resetSeed []byte
	// state is the reloadable state (mutual TLS), nil in dev mode.
	state *tlsState
}

// loadTLS builds server and client TLS configurations for cfg.
func loadTLS(cfg TLSConfig, log *slog.Logger) (*tlsMaterial, error) {
	if cfg.Dev() {
		warnDevTLS(log)
		cert, err := devCertificate()
		if err != nil {
			return nil, err
		}
		return &tlsMaterial{
			server: &tls.Config{
				MinVersion:   tls.VersionTLS13,
				NextProtos:   []string{ALPN},
				Certificates: []tls.Certificate{cert},
				ClientAuth:   tls.NoClientCert,
			},
			client: &tls.Config{
				MinVersion:         tls.VersionTLS13,
				NextProtos:         []string{ALPN},
				InsecureSkipVerify: true, // dev mode: documented, warned about
			},
		}, nil
	}
	if cfg.Name == "" {
		return nil, fmt.Errorf("quic: TLS directory %s given without a certificate name", cfg.Dir)
	}
	f, err := readTLSFiles(cfg)
	if err != nil {
		return nil, err
	}
	st, err := buildTLSState(cfg, f, time.Now())
	if err != nil {
		return nil, err
	}
	if st.verifyErr != nil {
		log.Warn("quic: TLS: certificate "+cfg.Name+" does not verify against "+CAFile+": peers will refuse it",
			"dir", cfg.Dir, "err", st.verifyErr)
	}
	logOwnRevoked(log, st)
	return &tlsMaterial{server: st.server, client: st.client, resetSeed: f.key, state: st}, nil
}

var devWarnOnce sync.Once

func warnDevTLS(log *slog.Logger) {
	devWarnOnce.Do(func() {
		log.Warn("!!! TLS DEV MODE: ephemeral self-signed certificate, peers are NOT authenticated and NOT authorized " +
			"(any peer may send node-to-node requests as any node); " +
			"create certificates with `paymentlog cert init/issue` and pass --tls-dir for real use !!!")
	})
}

var devCert struct {
	once sync.Once
	cert tls.Certificate
	err  error
}

// devCertificate returns the process's ephemeral self-signed certificate.
func devCertificate() (tls.Certificate, error) {
	devCert.once.Do(func() {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			devCert.err = err
			return
		}
		tmpl := &x509.Certificate{
			SerialNumber: randomSerial(),
			Subject:      pkix.Name{CommonName: "paymentlog-dev"},
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(365 * 24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
			DNSNames:     []string{"localhost"},
			IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			devCert.err = err
			return
		}
		devCert.cert = tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	})
	if devCert.err != nil {
		return tls.Certificate{}, fmt.Errorf("quic: dev certificate: %w", devCert.err)
	}
	return devCert.cert, nil
}

func randomSerial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic("quic: crypto/rand failed: " + err.Error())
	}
	return n
}

// resetKey returns the stateless reset key for an endpoint bound to addr. It
// must survive restarts so that a restarted node's resets match the tokens its
// previous incarnation handed out: it is derived from the node's private key
// (mutual TLS) or, in dev mode, from the listen address alone (dev mode
// authenticates nothing anyway). Client-only endpoints get a random key.
func resetKey(seed []byte, addr string, fixedAddr bool) ([32]byte, error) {
	var k [32]byte
	if !fixedAddr {
		_, err := rand.Read(k[:])
		return k, err
	}
	if seed == nil {
		sum := sha256.Sum256([]byte("paymentlog dev stateless reset key\x00" + addr))
		seed = sum[:]
	}
	b, err := hkdf.Key(sha256.New, seed, []byte(addr), "paymentlog/1 stateless reset key", len(k))
	copy(k[:], b)
	return k, err
}

// peerOf describes the remote side of a connection: the common name of its
// leaf certificate and, when the handshake verified that certificate against
// the cluster CA (authenticated), the role it carries.
func peerOf(addr string, st tls.ConnectionState, authenticated bool) Peer {
	p := Peer{Addr: addr, Authenticated: authenticated}
	if len(st.PeerCertificates) == 0 {
		return p
	}
	leaf := st.PeerCertificates[0]
	p.Name, p.leaf = leaf.Subject.CommonName, leaf
	if authenticated {
		id := IdentityOf(leaf)
		p.Role, p.NodeID = id.Role, id.NodeID
	}
	return p
}

var errNoTLSName = errors.New("quic: certificate name must be 1-64 letters, digits, '.', '_' or '-'")
