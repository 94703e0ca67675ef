package quic

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// certDirs caches one cluster CA (node1, node2, client) and one foreign CA (rogue)
// for the whole test binary: key generation is the slow part.
var certDirs struct {
	once           sync.Once
	cluster, rogue string
	err            error
}

func mustCertDirs(t *testing.T) (cluster, rogue string) {
	t.Helper()
	certDirs.once.Do(func() {
		base, err := os.MkdirTemp("", "quic-certs-")
		if err != nil {
			certDirs.err = err
			return
		}
		certDirs.cluster = filepath.Join(base, "cluster")
		certDirs.rogue = filepath.Join(base, "rogue")
		for _, step := range []func() error{
			func() error { return InitCA(certDirs.cluster, CertOptions{}) },
			func() error {
				return IssueCert(certDirs.cluster, "node1", []string{"127.0.0.1", "localhost"}, CertOptions{NodeID: 1})
			},
			func() error { return IssueCert(certDirs.cluster, "client", nil, CertOptions{}) },
			func() error {
				return IssueCert(certDirs.cluster, "node2", []string{"127.0.0.1"}, CertOptions{NodeID: 2})
			},
			func() error { return InitCA(certDirs.rogue, CertOptions{}) },
			func() error { return IssueCert(certDirs.rogue, "client", nil, CertOptions{}) },
			func() error { return IssueCert(certDirs.rogue, "node1", []string{"127.0.0.1"}, CertOptions{}) },
		} {
			if err := step(); err != nil {
				certDirs.err = err
				return
			}
		}
	})
	if certDirs.err != nil {
		t.Fatal(certDirs.err)
	}
	return certDirs.cluster, certDirs.rogue
}

func TestMain(m *testing.M) {
	code := m.Run()
	if certDirs.cluster != "" {
		os.RemoveAll(filepath.Dir(certDirs.cluster))
	}
	os.Exit(code)
}

func TestMutualTLSAcceptsClusterClient(t *testing.T) {
	cluster, _ := mustCertDirs(t)
	peers := make(chan Peer, 1)
	srv := mustServe(t, Config{TLS: TLSConfig{Dir: cluster, Name: "node1"}})
	srv.Handle(50, func(ctx context.Context, p Peer, req Frame) (FrameType, any, error) {
		peers <- p
		return 50, nil, nil
	})
	cli := mustClient(t, Config{TLS: TLSConfig{Dir: cluster, Name: "client"}})
	if err := cli.Call(context.Background(), srv.Addr(), 50, nil, nil); err != nil {
		t.Fatal(err)
	}
	if gotPeer := <-peers; gotPeer.Name != "client" {
		t.Fatalf("peer name %q, want client", gotPeer.Name)
	}
	s, err := cli.OpenSession(context.Background(), srv.Addr(), typeSession, echoMsg{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Peer().Name != "node1" {
		t.Fatalf("server name %q, want node1", s.Peer().Name)
	}
	s.Close()
}

// expectTLSFailure checks that a call fails, says TLS, and that the server
// keeps serving cluster members; it returns the call's error.
func expectTLSFailure(t *testing.T, srv *Endpoint, cli *Endpoint, cluster string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := cli.Call(ctx, srv.Addr(), typeEcho, echoMsg{N: 1}, nil)
	if err == nil {
		t.Fatal("call succeeded without acceptable TLS credentials")
	}
	if !strings.Contains(err.Error(), "TLS") {
		t.Fatalf("error %q does not mention TLS", err)
	}
	t.Logf("rejected as expected: %v", err)
	good := mustClient(t, Config{TLS: TLSConfig{Dir: cluster, Name: "client"}})
	if err := good.Call(ctx, srv.Addr(), typeEcho, echoMsg{N: 2}, nil); err != nil {
		t.Fatalf("cluster client refused after a bad one: %v", err)
	}
	return err
}

func TestMutualTLSRejectsClientWithoutCertificate(t *testing.T) {
	cluster, _ := mustCertDirs(t)
	srv := mustServe(t, Config{TLS: TLSConfig{Dir: cluster, Name: "node1"}})
	// Verifies the server properly but presents no certificate.
	caPEM, err := os.ReadFile(filepath.Join(cluster, CAFile))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	cli := mustClient(t, Config{ClientTLS: &tls.Config{RootCAs: pool, NextProtos: []string{ALPN}, MinVersion: tls.VersionTLS13}})
	if err := expectTLSFailure(t, srv, cli, cluster); !IsClientCertRequired(err) {
		t.Fatalf("IsClientCertRequired(%v) = false for a client without a certificate", err)
	}
}

func TestMutualTLSRejectsDevModeClient(t *testing.T) {
	cluster, _ := mustCertDirs(t)
	srv := mustServe(t, Config{TLS: TLSConfig{Dir: cluster, Name: "node1"}})
	if err := expectTLSFailure(t, srv, mustClient(t, Config{}), cluster); !IsClientCertRequired(err) {
		t.Fatalf("IsClientCertRequired(%v) = false for a dev-mode client", err)
	}
}

func TestMutualTLSRejectsForeignCAClient(t *testing.T) {
	cluster, rogue := mustCertDirs(t)
	srv := mustServe(t, Config{TLS: TLSConfig{Dir: cluster, Name: "node1"}})
	// A client certificate from another CA; it even trusts the cluster CA.
	cert, err := tls.LoadX509KeyPair(filepath.Join(rogue, "client.crt"), filepath.Join(rogue, "client.key"))
	if err != nil {
		t.Fatal(err)
	}
	caPEM, _ := os.ReadFile(filepath.Join(cluster, CAFile))
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	cli := mustClient(t, Config{ClientTLS: &tls.Config{
		RootCAs: pool, Certificates: []tls.Certificate{cert}, NextProtos: []string{ALPN}, MinVersion: tls.VersionTLS13,
	}})
	if err := expectTLSFailure(t, srv, cli, cluster); IsClientCertRequired(err) {
		t.Fatalf("IsClientCertRequired(%v) = true for a client that presented a (foreign) certificate", err)
	}
}

func TestClientRejectsServerFromForeignCA(t *testing.T) {
	cluster, rogue := mustCertDirs(t)
	impostor := mustServe(t, Config{TLS: TLSConfig{Dir: rogue, Name: "node1"}})
	cli := mustClient(t, Config{TLS: TLSConfig{Dir: cluster, Name: "client"}})
	err := cli.Call(context.Background(), impostor.Addr(), typeEcho, echoMsg{}, nil)
	if err == nil || !strings.Contains(err.Error(), "TLS") {
		t.Fatalf("got %v, want a TLS rejection of the impostor", err)
	}
	// And a dev-mode server is no better.
	dev := mustServe(t, Config{})
	if err := cli.Call(context.Background(), dev.Addr(), typeEcho, echoMsg{}, nil); err == nil {
		t.Fatal("cluster client accepted a dev-mode server")
	}
}

func TestIssuedCertificateUsages(t *testing.T) {
	cluster, _ := mustCertDirs(t)
	caPEM, _ := os.ReadFile(filepath.Join(cluster, CAFile))
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	crtPEM, _ := os.ReadFile(filepath.Join(cluster, "node1.crt"))
	b, _ := pem.Decode(crtPEM)
	crt, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := crt.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{u}, DNSName: "127.0.0.1"}); err != nil {
			t.Fatalf("usage %v: %v", u, err)
		}
	}
	if st, _ := os.Stat(filepath.Join(cluster, "node1.key")); st.Mode().Perm() != 0o600 {
		t.Fatalf("key mode %v", st.Mode().Perm())
	}
	if err := IssueCert(cluster, "node1", nil, CertOptions{}); !errors.Is(err, ErrExists) {
		t.Fatalf("re-issue without force: %v", err)
	}
	if err := InitCA(cluster, CertOptions{}); !errors.Is(err, ErrExists) {
		t.Fatalf("re-init without force: %v", err)
	}
	if err := IssueCert(cluster, "../evil", nil, CertOptions{}); err == nil {
		t.Fatal("path in certificate name accepted")
	}
}

func TestTLSDirWithoutName(t *testing.T) {
	var ce *ConfigError
	if _, err := New(context.Background(), Config{TLS: TLSConfig{Dir: t.TempDir()}}); !errors.As(err, &ce) || ce.Field != "TLS.Name" {
		t.Fatalf("got %v", err)
	}
	if _, err := New(context.Background(), Config{TLS: TLSConfig{Dir: t.TempDir(), Name: "x"}}); err == nil ||
		!strings.Contains(err.Error(), "ca.crt") {
		t.Fatalf("missing CA: %v", err)
	}
}
