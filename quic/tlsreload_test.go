package quic

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	qgo "github.com/quic-go/quic-go"
)

// reloadDirs makes a directory with a CA of its own and node1 and client
// certificates.
func reloadDirs(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	mustNoErr(t, InitCA(dir, CertOptions{}))
	mustNoErr(t, IssueCert(dir, "node1", []string{"127.0.0.1"}, CertOptions{NodeID: 1}))
	mustNoErr(t, IssueCert(dir, "client", nil, CertOptions{}))
	return dir
}

func mustNoErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// copyFiles copies names from one directory to another.
func copyFiles(t *testing.T, from, to string, names ...string) {
	t.Helper()
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(from, n))
		mustNoErr(t, err)
		mustNoErr(t, os.WriteFile(filepath.Join(to, n), b, 0o600))
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	mustNoErr(t, err)
	return b
}

// servedSerial is the serial of the certificate srv presented to cli on cli's
// pooled connection.
func servedSerial(t *testing.T, cli *Endpoint) string {
	t.Helper()
	conns := cli.pool.dialedConns()
	if len(conns) != 1 {
		t.Fatalf("client holds %d connections, want 1", len(conns))
	}
	return conns[0].ConnectionState().TLS.PeerCertificates[0].SerialNumber.Text(16)
}

func echo(t *testing.T, cli *Endpoint, addr string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cli.Call(ctx, addr, typeEcho, echoMsg{N: 1}, nil)
}

// reloadEvents collects what Config.OnTLSReload is told.
type reloadEvents struct {
	mu  sync.Mutex
	evs []TLSReload
}

func (r *reloadEvents) add(ev TLSReload) { r.mu.Lock(); r.evs = append(r.evs, ev); r.mu.Unlock() }

func (r *reloadEvents) all() []TLSReload {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.evs)
}

func TestReloadPresentsTheNewCertificate(t *testing.T) {
	dir := reloadDirs(t)
	var told reloadEvents
	srv := mustServe(t, Config{TLS: TLSConfig{Dir: dir, Name: "node1"}, TLSReloadInterval: -1, OnTLSReload: told.add})
	cli := mustClient(t, Config{TLS: TLSConfig{Dir: dir, Name: "client"}, TLSReloadInterval: -1})
	mustNoErr(t, echo(t, cli, srv.Addr()))
	first := srv.TLSStatus()
	if got := servedSerial(t, cli); got != first.Serial {
		t.Fatalf("served serial %s, status says %s", got, first.Serial)
	}
	if changed, err := srv.ReloadTLS(); changed || err != nil {
		t.Fatalf("reload of unchanged files: changed %v, err %v", changed, err)
	}

	mustNoErr(t, IssueCert(dir, "node1", []string{"127.0.0.1"}, CertOptions{NodeID: 1, Force: true, Validity: 48 * time.Hour}))
	changed, err := srv.ReloadTLS()
	if !changed || err != nil {
		t.Fatalf("reload: changed %v, err %v", changed, err)
	}
	st := srv.TLSStatus()
	if st.Serial == first.Serial || st.Reloads != 1 || time.Until(st.NotAfter) > 49*time.Hour {
		t.Fatalf("status after reload %+v (before: serial %s)", st, first.Serial)
	}
	if evs := told.all(); len(evs) != 1 || evs[0].Serial != st.Serial || evs[0].PreviousSerial != first.Serial ||
		evs[0].CAChanged || evs[0].RevokedChanged || evs[0].CAs != 1 || evs[0].Err != nil {
		t.Fatalf("told of reloads %+v; want one, the new serial, nothing else changed", evs)
	}
	// The connection up keeps its handshake; a new one gets the new certificate.
	mustNoErr(t, echo(t, cli, srv.Addr()))
	if got := servedSerial(t, cli); got != first.Serial {
		t.Fatalf("existing connection now shows serial %s", got)
	}
	cli2 := mustClient(t, Config{TLS: TLSConfig{Dir: dir, Name: "client"}, TLSReloadInterval: -1})
	mustNoErr(t, echo(t, cli2, srv.Addr()))
	if got := servedSerial(t, cli2); got != st.Serial {
		t.Fatalf("new connection shows serial %s, want the reloaded %s", got, st.Serial)
	}
}

func TestReloadRefusesWhatPeersWouldRefuse(t *testing.T) {
	dir := reloadDirs(t)
	var told reloadEvents
	srv := mustServe(t, Config{TLS: TLSConfig{Dir: dir, Name: "node1"}, TLSReloadInterval: -1, OnTLSReload: told.add})
	serial := srv.TLSStatus().Serial
	good := map[string][]byte{"node1.crt": readFile(t, filepath.Join(dir, "node1.crt")), "node1.key": readFile(t, filepath.Join(dir, "node1.key"))}
	restore := func() {
		for n, b := range good {
			mustNoErr(t, os.WriteFile(filepath.Join(dir, n), b, 0o600))
		}
	}
	other := t.TempDir()
	mustNoErr(t, InitCA(other, CertOptions{}))
	mustNoErr(t, IssueCert(other, "node1", []string{"127.0.0.1"}, CertOptions{NodeID: 1}))
	cases := []struct {
		name, want string
		write      func(t *testing.T)
	}{
		{"a new key before its certificate", "private key does not match", func(t *testing.T) {
			mustNoErr(t, IssueCert(other, "half", nil, CertOptions{NodeID: 1}))
			copyFiles(t, other, dir, "half.key")
			mustNoErr(t, os.Rename(filepath.Join(dir, "half.key"), filepath.Join(dir, "node1.key")))
		}},
		{"another node's certificate", "keeps the identity", func(t *testing.T) {
			mustNoErr(t, IssueCert(dir, "node1", []string{"127.0.0.1"}, CertOptions{NodeID: 2, Force: true}))
		}},
		{"a client certificate", "keeps the identity", func(t *testing.T) {
			mustNoErr(t, IssueCert(dir, "node1", nil, CertOptions{Force: true}))
		}},
		{"an expired certificate", "expired", func(t *testing.T) {
			past := func() time.Time { return time.Now().Add(-72 * time.Hour) }
			mustNoErr(t, IssueCert(dir, "node1", []string{"127.0.0.1"}, CertOptions{NodeID: 1, Force: true, Validity: 24 * time.Hour, Now: past}))
		}},
		{"a certificate of another CA", "does not verify", func(t *testing.T) {
			copyFiles(t, other, dir, "node1.crt", "node1.key")
		}},
		{"a missing key", "node1.key", func(t *testing.T) {
			mustNoErr(t, os.Remove(filepath.Join(dir, "node1.key")))
		}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer restore()
			c.write(t)
			changed, err := srv.ReloadTLS()
			if changed || err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), serial) {
				t.Fatalf("reload: changed %v, err %v; want a refusal saying %q and naming serial %s", changed, err, c.want, serial)
			}
			srv.ReloadTLS() //nolint:errcheck // the same files again: refused, not told again
			st := srv.TLSStatus()
			if st.Serial != serial || st.Refused != uint64(2*i+2) || st.Reloads != 0 || !strings.Contains(st.LastError, c.want) {
				t.Fatalf("status after refusal: %+v", st)
			}
			if evs := told.all(); len(evs) != i+1 || evs[i].Err == nil || !strings.Contains(evs[i].Err.Error(), c.want) || evs[i].Serial != serial {
				t.Fatalf("told of reloads %+v; want %d, the last refused with %q", evs, i+1, c.want)
			}
			// Still serving with the certificate it had.
			cli := mustClient(t, Config{TLS: TLSConfig{Dir: dir, Name: "client"}, TLSReloadInterval: -1})
			mustNoErr(t, echo(t, cli, srv.Addr()))
			if got := servedSerial(t, cli); got != serial {
				t.Fatalf("served %s after a refused reload, want %s", got, serial)
			}
		})
	}
	// The running files put back: nothing to reload, no error to report.
	if changed, err := srv.ReloadTLS(); changed || err != nil || srv.TLSStatus().LastError != "" {
		t.Fatalf("the running files put back: changed %v, err %v, status %+v", changed, err, srv.TLSStatus())
	}
	mustNoErr(t, IssueCert(dir, "node1", []string{"127.0.0.1"}, CertOptions{NodeID: 1, Force: true}))
	if changed, err := srv.ReloadTLS(); !changed || err != nil {
		t.Fatalf("a good reissue after refusals: changed %v, err %v", changed, err)
	}
	if st := srv.TLSStatus(); st.LastError != "" || st.Reloads != 1 {
		t.Fatalf("status after a good reload: %+v", st)
	}
}

// TestCARotationWithoutDowntime walks a CA rotation: trust both CAs, reissue
// every certificate, retire the old CA. Connections stay up throughout; the
// retirement closes those whose handshake presented a certificate of the
// retired CA, and a peer with a new one reconnects at once.
func TestCARotationWithoutDowntime(t *testing.T) {
	oldCA := reloadDirs(t)
	newCA := reloadDirs(t)

	srvDir, cliDir, laggardDir := t.TempDir(), t.TempDir(), t.TempDir()
	copyFiles(t, oldCA, srvDir, CAFile, "node1.crt", "node1.key")
	copyFiles(t, oldCA, cliDir, CAFile, "client.crt", "client.key")
	copyFiles(t, oldCA, laggardDir, CAFile, "client.crt", "client.key")
	srv := mustServe(t, Config{TLS: TLSConfig{Dir: srvDir, Name: "node1"}, TLSReloadInterval: -1})
	cli := mustClient(t, Config{TLS: TLSConfig{Dir: cliDir, Name: "client"}, TLSReloadInterval: -1})
	laggard := mustClient(t, Config{TLS: TLSConfig{Dir: laggardDir, Name: "client"}, TLSReloadInterval: -1})
	mustNoErr(t, echo(t, cli, srv.Addr()))
	mustNoErr(t, echo(t, laggard, srv.Addr()))
	laggardConn := laggard.pool.dialedConns()[0]

	// 1. Every endpoint trusts both CAs.
	bundle := append(readFile(t, filepath.Join(newCA, CAFile)), readFile(t, filepath.Join(oldCA, CAFile))...)
	for _, d := range []string{srvDir, cliDir, laggardDir} {
		mustNoErr(t, os.WriteFile(filepath.Join(d, CAFile), bundle, 0o644))
	}
	for _, e := range []*Endpoint{srv, cli, laggard} {
		if changed, err := e.ReloadTLS(); !changed || err != nil {
			t.Fatalf("reload of the bundle: changed %v, err %v", changed, err)
		}
		if st := e.TLSStatus(); st.CAs != 2 {
			t.Fatalf("status after the bundle: %+v", st)
		}
	}
	// 2. The node and one client get certificates of the new CA.
	copyFiles(t, newCA, srvDir, "node1.crt", "node1.key")
	copyFiles(t, newCA, cliDir, "client.crt", "client.key")
	mustNoErr(t, firstErr(srv.ReloadTLS()))
	mustNoErr(t, firstErr(cli.ReloadTLS()))
	if srv.TLSStatus().CANotAfter.IsZero() {
		t.Fatal("the reloaded certificate's CA is unknown")
	}
	fresh := mustClient(t, Config{TLS: TLSConfig{Dir: laggardDir, Name: "client"}, TLSReloadInterval: -1})
	mustNoErr(t, echo(t, fresh, srv.Addr())) // an old-CA client, a new-CA node: both trusted
	oldCliConn := cli.pool.dialedConns()[0]  // made with the old certificate
	reissued := mustClient(t, Config{TLS: TLSConfig{Dir: cliDir, Name: "client"}, TLSReloadInterval: -1})
	mustNoErr(t, echo(t, reissued, srv.Addr()))
	reissuedConn := reissued.pool.dialedConns()[0]
	// 3. The node retires the old CA.
	mustNoErr(t, os.WriteFile(filepath.Join(srvDir, CAFile), readFile(t, filepath.Join(newCA, CAFile)), 0o644))
	mustNoErr(t, firstErr(srv.ReloadTLS()))

	waitFor(t, 5*time.Second, "the laggard's connection to close", func() bool { return laggardConn.Context().Err() != nil })
	var appErr *qgo.ApplicationError
	if err := context.Cause(laggardConn.Context()); !errors.As(err, &appErr) || appErr.ErrorCode != ConnCodeUntrusted {
		t.Fatalf("laggard's connection closed with %v, want code %d", err, ConnCodeUntrusted)
	}
	waitFor(t, 5*time.Second, "the old certificate's connection to close", func() bool { return oldCliConn.Context().Err() != nil })
	if reissuedConn.Context().Err() != nil {
		t.Fatalf("a connection made with a new-CA certificate closed too: %v", context.Cause(reissuedConn.Context()))
	}
	mustNoErr(t, echo(t, reissued, srv.Addr()))
	if got := reissued.pool.dialedConns(); len(got) != 1 || got[0] != reissuedConn {
		t.Fatal("the new-CA client had to reconnect")
	}
	// The reissued client, whose connection of the old certificate was closed,
	// reconnects with its new one.
	waitFor(t, 5*time.Second, "the client to reconnect with its new certificate", func() bool { return echo(t, cli, srv.Addr()) == nil })
	if err := echo(t, laggard, srv.Addr()); err == nil {
		t.Fatal("a client with a certificate of the retired CA got through")
	}
}

func firstErr(_ bool, err error) error { return err }

func TestEndpointReloadsOnItsOwn(t *testing.T) {
	dir := reloadDirs(t)
	srv := mustServe(t, Config{TLS: TLSConfig{Dir: dir, Name: "node1"}, TLSReloadInterval: 20 * time.Millisecond})
	before := srv.TLSStatus().Serial
	mustNoErr(t, IssueCert(dir, "node1", []string{"127.0.0.1"}, CertOptions{NodeID: 1, Force: true}))
	waitFor(t, 10*time.Second, "the rotated certificate to be loaded", func() bool {
		st := srv.TLSStatus()
		return st.Reloads == 1 && st.Serial != before
	})
}

func TestDevModeHasNothingToReload(t *testing.T) {
	e := mustClient(t, Config{})
	if !e.TLSStatus().Dev {
		t.Fatal("dev endpoint's status is not Dev")
	}
	if _, err := e.ReloadTLS(); err == nil || !strings.Contains(err.Error(), "dev mode") {
		t.Fatalf("reload in dev mode: %v", err)
	}
}

// A node restarted with a rotated key but the same Config.ResetSeed still
// resets its previous incarnation's connections at once (with the seed
// derived from the key, as before ResetSeed, its peers would not recognise
// the resets and would wait for their idle timeout).
func TestResetSeedOutlivesKeyRotation(t *testing.T) {
	dir := reloadDirs(t)
	seed := []byte("0123456789abcdef0123456789abcdef")
	tlsCfg := TLSConfig{Dir: dir, Name: "node1"}
	srv1, done1 := startServer(t, "127.0.0.1:0", Config{TLS: tlsCfg, ResetSeed: seed})
	addr := srv1.Addr()
	cli := mustClient(t, Config{TLS: TLSConfig{Dir: dir, Name: "client"}, IdleTimeout: 30 * time.Second})
	ctx := context.Background()
	mustNoErr(t, cli.Call(ctx, addr, typeEcho, echoMsg{N: 1}, nil))
	kill(srv1)
	<-done1
	mustNoErr(t, IssueCert(dir, "node1", []string{"127.0.0.1"}, CertOptions{NodeID: 1, Force: true}))
	srv2, done2 := startServer(t, addr, Config{TLS: tlsCfg, ResetSeed: seed})
	defer func() { srv2.Close(); <-done2 }()

	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := cli.Call(cctx, addr, typeEcho, echoMsg{N: 2}, nil)
	if err != nil && !strings.Contains(err.Error(), "stateless reset") {
		t.Fatalf("call on the stale connection: %v, want a stateless reset", err)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Fatalf("stale connection noticed after %s", d)
	}
}

// A client whose certificate a node refuses (its CA retired) reloads its own
// files at once: when they hold a certificate of the new CA already, its next
// call gets through without waiting for its periodic reload. Under TLS 1.3
// the server verifies the client's certificate after the client's side of
// the handshake is done, so the refusal may close the connection after the
// first call wrote its request (that call fails with it) or before: the
// call then replaces the dead connection once, and when the connection's
// end has reloaded the files by then, it dials with the new certificate
// and succeeds (a CI run saw it). Either way there is one reload, and it
// is what lets a call through (the periodic reload is off).
func TestRefusedCertificateReloadsAtOnce(t *testing.T) {
	oldCA := reloadDirs(t)
	newCA := reloadDirs(t)
	srvDir, cliDir := t.TempDir(), t.TempDir()
	copyFiles(t, newCA, srvDir, CAFile, "node1.crt", "node1.key")
	bundle := append(readFile(t, filepath.Join(newCA, CAFile)), readFile(t, filepath.Join(oldCA, CAFile))...)
	copyFiles(t, oldCA, cliDir, "client.crt", "client.key")
	mustNoErr(t, os.WriteFile(filepath.Join(cliDir, CAFile), bundle, 0o644))
	srv := mustServe(t, Config{TLS: TLSConfig{Dir: srvDir, Name: "node1"}, TLSReloadInterval: -1})
	cli := mustClient(t, Config{TLS: TLSConfig{Dir: cliDir, Name: "client"}, TLSReloadInterval: -1})
	copyFiles(t, newCA, cliDir, "client.crt", "client.key") // on disk, not loaded
	if err := echo(t, cli, srv.Addr()); err != nil && !strings.Contains(err.Error(), "TLS rejected") {
		t.Fatalf("first call with the old certificate: %v, want a TLS refusal or an answer on a second connection", err)
	}
	waitFor(t, 10*time.Second, "a call with the reloaded certificate", func() bool { return echo(t, cli, srv.Addr()) == nil })
	if st := cli.TLSStatus(); st.Reloads != 1 {
		t.Fatalf("client status %+v, want one reload", st)
	}
}

// A client whose connection a node closes for a retired CA reloads its files
// at once, before its next call.
func TestUntrustedCloseReloadsAtOnce(t *testing.T) {
	oldCA := reloadDirs(t)
	newCA := reloadDirs(t)
	srvDir, cliDir := t.TempDir(), t.TempDir()
	bundle := append(readFile(t, filepath.Join(newCA, CAFile)), readFile(t, filepath.Join(oldCA, CAFile))...)
	copyFiles(t, newCA, srvDir, "node1.crt", "node1.key")
	copyFiles(t, oldCA, cliDir, "client.crt", "client.key")
	for _, d := range []string{srvDir, cliDir} {
		mustNoErr(t, os.WriteFile(filepath.Join(d, CAFile), bundle, 0o644))
	}
	srv := mustServe(t, Config{TLS: TLSConfig{Dir: srvDir, Name: "node1"}, TLSReloadInterval: -1})
	cli := mustClient(t, Config{TLS: TLSConfig{Dir: cliDir, Name: "client"}, TLSReloadInterval: -1})
	mustNoErr(t, echo(t, cli, srv.Addr()))
	copyFiles(t, newCA, cliDir, "client.crt", "client.key") // on disk, not loaded
	copyFiles(t, newCA, srvDir, CAFile)                     // the node retires the old CA
	mustNoErr(t, firstErr(srv.ReloadTLS()))
	waitFor(t, 10*time.Second, "the client to reload after its connection was closed", func() bool { return cli.TLSStatus().Reloads == 1 })
	mustNoErr(t, echo(t, cli, srv.Addr()))
}
