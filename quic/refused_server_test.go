package quic

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// dialHandshake runs one TLS handshake over TCP of a client under conf
// against a server presenting chain, and returns both sides' verdicts and
// the address dialed.
func dialHandshake(t *testing.T, conf *tls.Config, chain []testCert, addr string) (clientErr, serverErr error) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	mustNoErr(t, err)
	defer ln.Close()
	var cert tls.Certificate
	for _, c := range chain {
		cert.Certificate = append(cert.Certificate, c.cert.Raw)
	}
	cert.PrivateKey = chain[0].key
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		done <- tls.Server(c, &tls.Config{MinVersion: tls.VersionTLS13, NextProtos: []string{ALPN}, Certificates: []tls.Certificate{cert}}).Handshake()
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	mustNoErr(t, err)
	defer raw.Close()
	raw.SetDeadline(time.Now().Add(10 * time.Second))
	c := tls.Client(raw, conf)
	clientErr = c.Handshake()
	if clientErr == nil {
		c.Close()
	}
	return clientErr, <-done
}

// The dialing configuration that reports refused servers
// (reportingServerRefusals) accepts and refuses exactly the servers the
// configuration crypto/tls verifies itself (tlsState.client with the
// name dialed) does, failing with the same error and sending the server the
// same alert, and reports each refusal once, outbound, with its reason, the
// address dialed, the name checked and the presented certificate. Without
// OnRefusedPeer the dial's configuration is the plain one.
func TestServerRefusalsMatchTLS(t *testing.T) {
	now := func() time.Time { return refusalNow }
	ca := mustCert(t, certSpec{cn: "cluster CA", ca: true}, nil)
	rogue := mustCert(t, certSpec{cn: "rogue CA", ca: true}, nil)
	inter := mustCert(t, certSpec{cn: "intermediate", ca: true}, &ca)
	oldInter := mustCert(t, certSpec{cn: "expired intermediate", ca: true, notAfter: refusalNow.Add(-time.Minute)}, &ca)
	self := mustCert(t, certSpec{cn: "node1"}, &ca)
	revoked := mustCert(t, certSpec{cn: "node3"}, &ca)

	cases := []struct {
		name   string
		chain  []testCert
		reason string // "": accepted
	}{
		{"valid", []testCert{mustCert(t, certSpec{cn: "node2"}, &ca)}, ""},
		{"valid, through an intermediate", []testCert{mustCert(t, certSpec{cn: "via"}, &inter), inter}, ""},
		{"no extended key usage", []testCert{mustCert(t, certSpec{cn: "any", noUsages: true}, &ca)}, ""},
		{"valid, among other names", []testCert{mustCert(t, certSpec{cn: "multi", names: []string{"node2.example", "127.0.0.1"}}, &ca)}, ""},
		{"unknown CA", []testCert{mustCert(t, certSpec{cn: "stranger"}, &rogue)}, RefusedUnknownCA},
		{"self-signed", []testCert{mustCert(t, certSpec{cn: "selfie"}, nil)}, RefusedUnknownCA},
		{"intermediate missing", []testCert{mustCert(t, certSpec{cn: "orphan"}, &inter)}, RefusedUnknownCA},
		{"expired", []testCert{mustCert(t, certSpec{cn: "old", notAfter: refusalNow.Add(-time.Second)}, &ca)}, RefusedExpired},
		{"not yet valid", []testCert{mustCert(t, certSpec{cn: "early", notBefore: refusalNow.Add(time.Hour)}, &ca)}, RefusedNotYetValid},
		{"expired intermediate", []testCert{mustCert(t, certSpec{cn: "late"}, &oldInter), oldInter}, RefusedExpired},
		{"client authentication only", []testCert{mustCert(t, certSpec{cn: "client", usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, &ca)}, RefusedBadUsage},
		{"another name", []testCert{mustCert(t, certSpec{cn: "127.0.0.1", names: []string{"node2.example"}}, &ca)}, RefusedNameMismatch},
		{"no name at all", []testCert{mustCert(t, certSpec{cn: "127.0.0.1", noNames: true}, &ca)}, RefusedNameMismatch},
		{"revoked", []testCert{revoked}, RefusedRevoked},
	}
	st := mustTLSState(t, []*x509.Certificate{ca.cert}, self, []*x509.Certificate{revoked.cert}, now)
	st.client.Time = now
	var mu sync.Mutex
	var told []RefusedPeer
	reporting := &Endpoint{}
	reporting.cfg.OnRefusedPeer = func(p RefusedPeer) { mu.Lock(); told = append(told, p); mu.Unlock() }
	const addr = "127.0.0.1:0"
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plain := st.client.Clone()
			plain.ServerName = "127.0.0.1"
			if got := (&Endpoint{}).reportingServerRefusals(st, plain, addr); got != plain {
				t.Fatal("without OnRefusedPeer the dial's configuration changed")
			}
			conf := reporting.reportingServerRefusals(st, plain, addr)
			if conf == plain {
				t.Fatal("with OnRefusedPeer the dial's configuration is the plain one")
			}
			pcli, psrv := dialHandshake(t, plain, c.chain, "127.0.0.1:0")
			rcli, rsrv := dialHandshake(t, conf, c.chain, "127.0.0.1:0")
			if (pcli == nil) != (c.reason == "") {
				t.Fatalf("crypto/tls: %v; want refused: %v", pcli, c.reason != "")
			}
			if (pcli == nil) != (rcli == nil) || pcli != nil && pcli.Error() != rcli.Error() {
				t.Fatalf("crypto/tls: %v; reporting: %v", pcli, rcli)
			}
			if (psrv == nil) != (rsrv == nil) || psrv != nil && psrv.Error() != rsrv.Error() {
				t.Fatalf("the server was told: crypto/tls %v; reporting %v", psrv, rsrv)
			}
			mu.Lock()
			got := told
			told = nil
			mu.Unlock()
			if c.reason == "" {
				if len(got) != 0 {
					t.Fatalf("accepted, yet reported %+v", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("reported %d times (%+v), want once", len(got), got)
			}
			p, leaf := got[0], c.chain[0].cert
			if p.Side != SideOutbound || p.Reason != c.reason || p.Addr != addr || p.ServerName != "127.0.0.1" || p.Err == nil ||
				p.Err.Error() != rcli.Error() {
				t.Fatalf("reported %+v (handshake: %v); want outbound, reason %s, to %s", p, rcli, c.reason, addr)
			}
			if p.Name != leaf.Subject.CommonName || p.Serial != serialKey(leaf.SerialNumber) || p.Issuer != leaf.Issuer.String() ||
				!p.NotAfter.Equal(leaf.NotAfter) || !p.NotBefore.Equal(leaf.NotBefore) {
				t.Fatalf("reported %+v; want the certificate %q, serial %s, issuer %s", p, leaf.Subject.CommonName, serialKey(leaf.SerialNumber), leaf.Issuer)
			}
		})
	}
}

// Over QUIC, an endpoint told of refusals reports the servers it dials and
// refuses: one of another CA (unknown-ca) and one of the cluster whose
// certificate is not for the address dialed (name-mismatch), each with the
// address dialed; the server is refused as before, and a valid server is
// still accepted.
func TestRefusedServerOverQUIC(t *testing.T) {
	cluster, rogue := mustCertDirs(t)
	foreign := mustServe(t, Config{TLS: TLSConfig{Dir: rogue, Name: "node1"}})
	unnamed := mustServe(t, Config{TLS: TLSConfig{Dir: cluster, Name: "client"}}) // issued for no address
	good := mustServe(t, Config{TLS: TLSConfig{Dir: cluster, Name: "node2"}})
	var mu sync.Mutex
	var told []RefusedPeer
	cli := mustClient(t, Config{TLS: TLSConfig{Dir: cluster, Name: "client"},
		OnRefusedPeer: func(p RefusedPeer) { mu.Lock(); told = append(told, p); mu.Unlock() }})
	for _, srv := range []*Endpoint{foreign, unnamed} {
		if err := echo(t, cli, srv.Addr()); err == nil || !strings.Contains(err.Error(), "bad certificate") {
			t.Fatalf("dialing %s: %v; want refused, bad certificate", srv.Addr(), err)
		}
	}
	mustNoErr(t, echo(t, cli, good.Addr()))
	mu.Lock()
	defer mu.Unlock()
	want := map[string]string{foreign.Addr(): RefusedUnknownCA, unnamed.Addr(): RefusedNameMismatch}
	seen := map[string]bool{}
	for _, p := range told {
		if p.Side != SideOutbound || want[p.Addr] != p.Reason || p.ServerName != "127.0.0.1" || p.Serial == "" {
			t.Fatalf("reported %+v; want %v, outbound", p, want)
		}
		seen[p.Addr] = true
	}
	if len(seen) != 2 {
		t.Fatalf("reported %+v; want both refused servers", told)
	}
}
