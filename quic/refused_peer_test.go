package quic

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// refusalNow is the servers' clock in TestRefusalsMatchTLS.
var refusalNow = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

// testCert is a certificate and its key.
type testCert struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// certSpec describes a certificate mustCert issues.
type certSpec struct {
	cn                  string
	ca                  bool
	notBefore, notAfter time.Time // zero: an hour before refusalNow, a year after
	usages              []x509.ExtKeyUsage
	noUsages            bool     // no extended key usage at all
	names               []string // subject alternative names, IPs or DNS names; nil: 127.0.0.1
	noNames             bool     // no subject alternative name at all
}

// mustCert issues spec's certificate, signed by parent (nil: self-signed).
func mustCert(t *testing.T, spec certSpec, parent *testCert) testCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	mustNoErr(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: randomSerial(),
		Subject:      pkix.Name{CommonName: spec.cn},
		NotBefore:    spec.notBefore,
		NotAfter:     spec.notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  spec.usages,
	}
	names := spec.names
	if names == nil && !spec.noNames {
		names = []string{"127.0.0.1"}
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	if tmpl.NotBefore.IsZero() {
		tmpl.NotBefore = refusalNow.Add(-time.Hour)
	}
	if tmpl.NotAfter.IsZero() {
		tmpl.NotAfter = refusalNow.Add(365 * 24 * time.Hour)
	}
	if spec.ca {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	} else if !spec.noUsages && tmpl.ExtKeyUsage == nil {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	}
	signer, signerKey := tmpl, crypto.Signer(key)
	if parent != nil {
		signer, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	mustNoErr(t, err)
	c, err := x509.ParseCertificate(der)
	mustNoErr(t, err)
	return testCert{cert: c, key: key}
}

func keyPEM(t *testing.T, k *ecdsa.PrivateKey) []byte {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	mustNoErr(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// mustTLSState is a server's TLS state: ca.crt holds cas, the server
// presents srv, revoked.txt lists revoked; its clock is clock.
func mustTLSState(t *testing.T, cas []*x509.Certificate, srv testCert, revoked []*x509.Certificate, clock func() time.Time) *tlsState {
	t.Helper()
	var list strings.Builder
	for _, c := range revoked {
		list.WriteString(serialKey(c.SerialNumber) + "\n")
	}
	st, err := buildTLSState(TLSConfig{Dir: t.TempDir(), Name: "node1"},
		tlsFiles{ca: encodeCerts(cas...), cert: encodeCerts(srv.cert), key: keyPEM(t, srv.key), revoked: []byte(list.String())}, refusalNow)
	mustNoErr(t, err)
	st.server.Time = clock
	return st
}

// handshakeServer serves TLS handshakes over TCP the way an Endpoint serves
// QUIC ones: a fixed configuration whose GetConfigForClient takes the
// current state, reporting (OnRefusedPeer set) or not.
type handshakeServer struct {
	cur  atomic.Pointer[tlsState]
	base *tls.Config
	mu   sync.Mutex
	told []RefusedPeer
}

func newHandshakeServer(st *tlsState, reporting bool) *handshakeServer {
	s := &handshakeServer{}
	s.cur.Store(st)
	e := &Endpoint{}
	if reporting {
		e.cfg.OnRefusedPeer = func(p RefusedPeer) { s.mu.Lock(); s.told = append(s.told, p); s.mu.Unlock() }
	}
	s.base = st.server.Clone()
	s.base.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		return e.reportingRefusals(s.cur.Load(), hello), nil
	}
	return s
}

// reported returns and forgets what the server reported.
func (s *handshakeServer) reported() []RefusedPeer {
	s.mu.Lock()
	defer s.mu.Unlock()
	told := s.told
	s.told = nil
	return told
}

// handshake runs one handshake of a client presenting chain (nil: no
// certificate) and returns the server's verdict and whether the session was
// resumed (from cache, when set).
func (s *handshakeServer) handshake(t *testing.T, chain []testCert, cache tls.ClientSessionCache) (resumed bool, err error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	mustNoErr(t, err)
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		done <- tls.Server(c, s.base).Handshake()
	}()
	var cert tls.Certificate
	for _, c := range chain {
		cert.Certificate = append(cert.Certificate, c.cert.Raw)
	}
	if len(chain) > 0 {
		cert.PrivateKey = chain[0].key
	}
	cli := &tls.Config{
		MinVersion: tls.VersionTLS13, NextProtos: []string{ALPN}, InsecureSkipVerify: true, ClientSessionCache: cache,
		// Present chain whatever CAs the server names (a client of another CA would present none).
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil },
	}
	c, cerr := tls.Dial("tcp", ln.Addr().String(), cli)
	if cerr == nil {
		resumed = c.ConnectionState().DidResume
		c.SetDeadline(time.Now().Add(10 * time.Second))
		c.Read(make([]byte, 1)) // takes the session ticket, then the server's close
		c.Close()
	}
	return resumed, <-done
}

// The per-handshake configuration that reports refused peers
// (reportingRefusals) accepts and refuses exactly the handshakes the
// configuration crypto/tls verifies itself (tlsState.server) does, also on
// resumed sessions, and reports each refusal once, with its reason, the
// client's address and the presented certificate.
func TestRefusalsMatchTLS(t *testing.T) {
	var clock atomic.Pointer[time.Time]
	setNow := func(tm time.Time) { clock.Store(&tm) }
	setNow(refusalNow)
	now := func() time.Time { return *clock.Load() }

	ca := mustCert(t, certSpec{cn: "cluster CA", ca: true}, nil)
	rogue := mustCert(t, certSpec{cn: "rogue CA", ca: true}, nil)
	inter := mustCert(t, certSpec{cn: "intermediate", ca: true}, &ca)
	oldInter := mustCert(t, certSpec{cn: "expired intermediate", ca: true, notAfter: refusalNow.Add(-time.Minute)}, &ca)
	node := mustCert(t, certSpec{cn: "node1"}, &ca)
	valid := mustCert(t, certSpec{cn: "client"}, &ca)
	revoked := mustCert(t, certSpec{cn: "mallory"}, &ca)

	type tc struct {
		name   string
		chain  []testCert
		reason string // "": accepted
	}
	cases := []tc{
		{"valid", []testCert{valid}, ""},
		{"valid, through an intermediate", []testCert{mustCert(t, certSpec{cn: "via"}, &inter), inter}, ""},
		{"no extended key usage", []testCert{mustCert(t, certSpec{cn: "any", noUsages: true}, &ca)}, ""},
		{"no certificate", nil, RefusedNoCertificate},
		{"unknown CA", []testCert{mustCert(t, certSpec{cn: "stranger"}, &rogue)}, RefusedUnknownCA},
		{"self-signed", []testCert{mustCert(t, certSpec{cn: "selfie"}, nil)}, RefusedUnknownCA},
		{"intermediate missing", []testCert{mustCert(t, certSpec{cn: "orphan"}, &inter)}, RefusedUnknownCA},
		{"expired", []testCert{mustCert(t, certSpec{cn: "old", notAfter: refusalNow.Add(-time.Second)}, &ca)}, RefusedExpired},
		{"not yet valid", []testCert{mustCert(t, certSpec{cn: "early", notBefore: refusalNow.Add(time.Hour)}, &ca)}, RefusedNotYetValid},
		{"expired intermediate", []testCert{mustCert(t, certSpec{cn: "late"}, &oldInter), oldInter}, RefusedExpired},
		{"server authentication only", []testCert{mustCert(t, certSpec{cn: "server", usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, &ca)}, RefusedBadUsage},
		{"revoked", []testCert{revoked}, RefusedRevoked},
	}
	st := mustTLSState(t, []*x509.Certificate{ca.cert}, node, []*x509.Certificate{revoked.cert}, now)
	plain, reporting := newHandshakeServer(st, false), newHandshakeServer(st, true)
	check := func(t *testing.T, c tc, cache tls.ClientSessionCache, plainCache tls.ClientSessionCache, wantResumed bool) {
		t.Helper()
		presumed, perr := plain.handshake(t, c.chain, plainCache)
		rresumed, rerr := reporting.handshake(t, c.chain, cache)
		if (perr == nil) != (rerr == nil) {
			t.Fatalf("crypto/tls: %v; reporting: %v", perr, rerr)
		}
		if (perr == nil) != (c.reason == "") {
			t.Fatalf("crypto/tls: %v; want refused: %v", perr, c.reason != "")
		}
		if wantResumed && (!presumed || !rresumed) {
			t.Fatalf("resumed: crypto/tls %v, reporting %v; want both", presumed, rresumed)
		}
		if told := plain.reported(); len(told) != 0 {
			t.Fatalf("the server without OnRefusedPeer reported %+v", told)
		}
		told := reporting.reported()
		if c.reason == "" {
			if len(told) != 0 {
				t.Fatalf("accepted, yet reported %+v", told)
			}
			return
		}
		if len(told) != 1 {
			t.Fatalf("reported %d times (%+v), want once", len(told), told)
		}
		p := told[0]
		if p.Reason != c.reason || !strings.HasPrefix(p.Addr, "127.0.0.1:") || p.Err == nil || !strings.Contains(rerr.Error(), p.Err.Error()) {
			t.Fatalf("reported %+v (handshake: %v); want reason %s from 127.0.0.1", p, rerr, c.reason)
		}
		if len(c.chain) > 0 {
			leaf := c.chain[0].cert
			if p.Name != leaf.Subject.CommonName || p.Serial != serialKey(leaf.SerialNumber) || p.Issuer != leaf.Issuer.String() ||
				!p.NotAfter.Equal(leaf.NotAfter) || !p.NotBefore.Equal(leaf.NotBefore) {
				t.Fatalf("reported %+v; want the certificate %q, serial %s, issuer %s", p, leaf.Subject.CommonName, serialKey(leaf.SerialNumber), leaf.Issuer)
			}
		} else if p.Name != "" || p.Serial != "" {
			t.Fatalf("reported %+v for no certificate", p)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { check(t, c, nil, nil, false) })
	}

	// Resumed sessions: each side resumes a session of its own (its own
	// ticket keys) and is held to what the full handshake would answer now.
	resume := func(name string, chain []testCert, change func(), restore func(), reason string, wantResumed bool) {
		t.Run("resumed: "+name, func(t *testing.T) {
			pc, rc := tls.NewLRUClientSessionCache(4), tls.NewLRUClientSessionCache(4)
			check(t, tc{chain: chain}, rc, pc, false)
			change()
			defer restore()
			check(t, tc{chain: chain, reason: reason}, rc, pc, wantResumed)
		})
	}
	nop := func() {}
	resume("valid", []testCert{valid}, nop, nop, "", true)
	short := mustCert(t, certSpec{cn: "short", notAfter: refusalNow.Add(time.Hour)}, &ca)
	resume("expired since", []testCert{short}, func() { setNow(refusalNow.Add(2 * time.Hour)) }, func() { setNow(refusalNow) }, RefusedExpired, false)
	swap := func(next *tlsState) func() {
		return func() { plain.cur.Store(next); reporting.cur.Store(next) }
	}
	back := swap(st)
	later := mustCert(t, certSpec{cn: "later"}, &ca)
	resume("revoked since", []testCert{later},
		swap(mustTLSState(t, []*x509.Certificate{ca.cert}, node, []*x509.Certificate{later.cert}, now)), back, RefusedRevoked, false)
	resume("CA no longer trusted", []testCert{valid},
		swap(mustTLSState(t, []*x509.Certificate{rogue.cert}, node, nil, now)), back, RefusedUnknownCA, false)
	resume("the intermediate's CA replaced", []testCert{mustCert(t, certSpec{cn: "via2"}, &inter), inter},
		swap(mustTLSState(t, []*x509.Certificate{rogue.cert, inter.cert}, node, nil, now)), back, "", false)
}

// Over QUIC, a reporting endpoint tells a client the alert crypto/tls would
// have sent: a client without a certificate still learns that one is
// required, and one of another CA that its CA is unknown; both are reported.
func TestRefusedPeerOverQUIC(t *testing.T) {
	cluster, rogue := mustCertDirs(t)
	var mu sync.Mutex
	var told []RefusedPeer
	srv := mustServe(t, Config{TLS: TLSConfig{Dir: cluster, Name: "node1"},
		OnRefusedPeer: func(p RefusedPeer) { mu.Lock(); told = append(told, p); mu.Unlock() }})
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(readFile(t, cluster+"/"+CAFile))
	bare := mustClient(t, Config{ClientTLS: &tls.Config{RootCAs: pool, NextProtos: []string{ALPN}, MinVersion: tls.VersionTLS13}})
	if err := echo(t, bare, srv.Addr()); !IsClientCertRequired(err) {
		t.Fatalf("no certificate: %v; want the certificate_required alert", err)
	}
	cert, err := tls.LoadX509KeyPair(rogue+"/client.crt", rogue+"/client.key")
	mustNoErr(t, err)
	foreign := mustClient(t, Config{ClientTLS: &tls.Config{RootCAs: pool, NextProtos: []string{ALPN}, MinVersion: tls.VersionTLS13,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }}})
	if err := echo(t, foreign, srv.Addr()); err == nil || !strings.Contains(err.Error(), "unknown certificate authority") {
		t.Fatalf("a foreign certificate: %v; want the unknown_ca alert", err)
	}
	good := mustClient(t, Config{TLS: TLSConfig{Dir: cluster, Name: "client"}})
	mustNoErr(t, echo(t, good, srv.Addr()))
	mu.Lock()
	defer mu.Unlock()
	reasons := map[string]int{}
	for _, p := range told {
		reasons[p.Reason]++
		if !strings.HasPrefix(p.Addr, "127.0.0.1:") {
			t.Fatalf("reported %+v without the client's address", p)
		}
		if p.Reason == RefusedUnknownCA && p.Name != "client" {
			t.Fatalf("reported %+v; want the foreign certificate's name", p)
		}
	}
	if reasons[RefusedNoCertificate] == 0 || reasons[RefusedUnknownCA] == 0 || len(reasons) != 2 {
		t.Fatalf("reported %v; want no-certificate and unknown-ca", reasons)
	}
}
