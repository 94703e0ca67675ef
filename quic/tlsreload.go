package quic

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	qgo "github.com/quic-go/quic-go"
)

// DefaultTLSReloadInterval is how often an endpoint looks at its TLS files.
const DefaultTLSReloadInterval = time.Minute

// expiryWarning is how long before its certificate expires an endpoint starts
// warning, once a day.
const expiryWarning = 30 * 24 * time.Hour

// tlsReloader holds an endpoint's current TLS state (mutual TLS only) and
// replaces it when the files change: certificates rotate without a restart.
// Handshakes read the state as they start; connections already up keep the
// certificates they were made with, except those whose peer a new ca.crt no
// longer trusts, which are closed (see dropUntrusted).
type tlsReloader struct {
	cur     atomic.Pointer[tlsState]
	reloads atomic.Uint64
	refused atomic.Uint64
	// refusedAt is when reloadOnRefusal last read the files (UnixNano).
	refusedAt atomic.Int64
	mu        struct {
		sync.Mutex
		lastErr      string
		refusedFiles [sha256.Size]byte // the files last refused: logged once
		warnedAt     time.Time         // the last expiry warning
	}
}

// TLSStatus describes the certificate an endpoint presents and its reloads.
type TLSStatus struct {
	Dev        bool      // dev mode: an ephemeral certificate, nothing to reload
	Name       string    // the certificate's common name
	Serial     string    // hex
	NotAfter   time.Time // the certificate's expiry
	CANotAfter time.Time // the expiry of the CA that signed it; zero if it does not verify against ca.crt
	CAs        int       // CA certificates ca.crt holds
	LoadedAt   time.Time
	Reloads    uint64 // reloads that replaced the certificate or the CA bundle
	Refused    uint64 // reloads refused (the endpoint kept what it had)
	LastError  string // why the last reload was refused; "" once one succeeds
}

// TLSStatus reports the endpoint's certificate and its reloads.
func (e *Endpoint) TLSStatus() TLSStatus {
	st := e.tlsr.cur.Load()
	if st == nil {
		return TLSStatus{Dev: true}
	}
	s := TLSStatus{
		Name:     st.leaf.Subject.CommonName,
		Serial:   st.leaf.SerialNumber.Text(16),
		NotAfter: st.leaf.NotAfter,
		CAs:      st.cas,
		LoadedAt: st.loadedAt,
		Reloads:  e.tlsr.reloads.Load(),
		Refused:  e.tlsr.refused.Load(),
	}
	if st.issuer != nil {
		s.CANotAfter = st.issuer.NotAfter
	}
	e.tlsr.mu.Lock()
	s.LastError = e.tlsr.mu.lastErr
	e.tlsr.mu.Unlock()
	return s
}

// ReloadTLS reads the endpoint's ca.crt, certificate and key again and, when
// they changed, makes new handshakes use them. It refuses (keeping what it
// has) files that do not make a whole, valid set: a key that does not match
// the certificate (a rotation half written), a certificate that does not
// verify against the new ca.crt or has expired, or one with another identity
// (role, node id or name). After a reload that changed ca.crt, connections
// whose peer certificate the new bundle no longer trusts are closed.
// The endpoint also reloads by itself every Config.TLSReloadInterval.
func (e *Endpoint) ReloadTLS() (changed bool, err error) {
	if e.tlsr.cur.Load() == nil {
		return false, errors.New("quic: nothing to reload: the endpoint runs in TLS dev mode")
	}
	r := &e.tlsr
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	cur := r.cur.Load()
	f, err := readTLSFiles(e.cfg.TLS)
	if err == nil && f.digest() == cur.digest {
		// The files are what the endpoint runs with (again, after a
		// refused set was put back): nothing to report.
		r.mu.lastErr, r.mu.refusedFiles = "", [sha256.Size]byte{}
		return false, nil
	}
	var next *tlsState
	if err == nil {
		next, err = buildTLSState(e.cfg.TLS, f, now)
	}
	if err == nil {
		err = checkReload(cur, next)
	}
	if err != nil {
		r.refused.Add(1)
		r.mu.lastErr = err.Error()
		err = fmt.Errorf("quic: TLS reload of %s refused, still presenting certificate serial %s: %w",
			e.cfg.TLS.Dir, cur.leaf.SerialNumber.Text(16), err)
		if d := f.digest(); d != r.mu.refusedFiles {
			r.mu.refusedFiles = d
			e.log.Warn(err.Error())
			e.tellReload(TLSReload{Serial: serialOf(cur), CAs: cur.cas, Revoked: len(cur.revoked), Err: err})
		}
		return false, err
	}
	r.cur.Store(next)
	r.reloads.Add(1)
	r.mu.lastErr = ""
	r.mu.refusedFiles = [sha256.Size]byte{}
	e.log.Info("quic: TLS reloaded: new handshakes present this certificate and trust this ca.crt",
		"dir", e.cfg.TLS.Dir, "name", e.cfg.TLS.Name, "serial", next.leaf.SerialNumber.Text(16),
		"not_after", next.leaf.NotAfter.UTC(), "cas", next.cas, "previous_serial", cur.leaf.SerialNumber.Text(16))
	r.mu.warnedAt = time.Time{}
	e.warnExpiryLocked(next, now)
	logOwnRevoked(e.log, next)
	if cur.caDigest != next.caDigest || cur.revokedDigest != next.revokedDigest {
		e.dropUntrusted(next, now)
	}
	e.tellReload(TLSReload{Serial: serialOf(next), PreviousSerial: serialOf(cur), CAChanged: cur.caDigest != next.caDigest,
		RevokedChanged: cur.revokedDigest != next.revokedDigest, CAs: next.cas, Revoked: len(next.revoked)})
	return true, nil
}

// reloadOnRefusal reloads the TLS files, at most once a second, when a peer
// refused the certificate this endpoint presented: in the handshake (a TLS
// alert it sent) or later (it closed the connection with ConnCodeUntrusted
// after retiring a CA); err is how a dial failed or a connection ended.
// After a CA rotation the files may already hold the certificate the peer
// wants; the next dial then presents it at once instead of after the next
// periodic reload.
func (e *Endpoint) reloadOnRefusal(err error) {
	if e.tlsr.cur.Load() == nil || !refusedOurCertificate(err) {
		return
	}
	now := time.Now().UnixNano()
	last := e.tlsr.refusedAt.Load()
	if now-last < int64(time.Second) || !e.tlsr.refusedAt.CompareAndSwap(last, now) {
		return
	}
	if changed, _ := e.ReloadTLS(); changed {
		e.log.Info("quic: a peer refused this endpoint's certificate and newer TLS files were on disk: reloaded them", "err", describe(err))
	}
}

func refusedOurCertificate(err error) bool {
	var te *qgo.TransportError
	var ae *qgo.ApplicationError
	switch {
	case errors.As(err, &te):
		return te.Remote && te.ErrorCode.IsCryptoError()
	case errors.As(err, &ae):
		return ae.Remote && ae.ErrorCode == ConnCodeUntrusted
	}
	return false
}

// watchTLS reloads every interval until the endpoint is closed.
func (e *Endpoint) watchTLS(interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-e.hardCtx.Done():
			return
		case <-t.C:
		}
		// A refusal is logged by ReloadTLS, once per set of files.
		e.ReloadTLS() //nolint:errcheck
		e.tlsr.mu.Lock()
		e.warnExpiryLocked(e.tlsr.cur.Load(), time.Now())
		e.tlsr.mu.Unlock()
	}
}

// warnExpiryLocked warns, at most once a day, while st's certificate or its
// CA expires within expiryWarning (or has expired).
func (e *Endpoint) warnExpiryLocked(st *tlsState, now time.Time) {
	r := &e.tlsr
	if !r.mu.warnedAt.IsZero() && now.Sub(r.mu.warnedAt) < 24*time.Hour {
		return
	}
	for _, c := range []*x509.Certificate{st.leaf, st.issuer} {
		if c == nil || c.NotAfter.Sub(now) > expiryWarning {
			continue
		}
		r.mu.warnedAt = now
		what := "certificate " + e.cfg.TLS.Name
		if c == st.issuer {
			what = "the CA that signed certificate " + e.cfg.TLS.Name
		}
		left := c.NotAfter.Sub(now).Round(time.Hour)
		if left <= 0 {
			e.log.Error("quic: TLS: "+what+" has EXPIRED: peers refuse new connections with it; issue a new one (`paymentlog cert`), the endpoint reloads it",
				"dir", e.cfg.TLS.Dir, "not_after", c.NotAfter.UTC())
		} else {
			e.log.Warn("quic: TLS: "+what+" expires soon: issue a new one (`paymentlog cert`), the endpoint reloads it",
				"dir", e.cfg.TLS.Dir, "not_after", c.NotAfter.UTC(), "in", left.String())
		}
		return
	}
}

// dropUntrusted closes every connection, accepted or dialed, whose peer
// presented a certificate st's bundle no longer verifies: a CA removed from
// ca.crt is no longer trusted on connections already up either. Expiry alone
// does not close a connection (the handshake checked it; new ones are
// refused), so the check runs at a time within the peer certificate's
// validity.
func (e *Endpoint) dropUntrusted(st *tlsState, now time.Time) {
	var conns []*qgo.Conn
	if e.mutualTLS {
		e.mu.Lock()
		for c := range e.mu.conns {
			conns = append(conns, c)
		}
		e.mu.Unlock()
	}
	if e.verifiesServers {
		conns = append(conns, e.pool.dialedConns()...)
	}
	for _, c := range conns {
		cs := c.ConnectionState().TLS
		err := verifyPeer(cs, st.pool, now)
		if err == nil {
			err = st.revoked.refusePeer(cs)
		}
		if err != nil {
			e.log.Warn("quic: closing a connection whose peer certificate the reloaded ca.crt or "+RevokedFile+" no longer trusts",
				"peer", c.RemoteAddr().String(), "err", err)
			c.CloseWithError(ConnCodeUntrusted, "peer certificate no longer trusted")
		}
	}
}

func verifyPeer(cs tls.ConnectionState, pool *x509.CertPool, now time.Time) error {
	if len(cs.PeerCertificates) == 0 {
		return nil
	}
	leaf := cs.PeerCertificates[0]
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	at := now
	if at.After(leaf.NotAfter) {
		at = leaf.NotAfter
	}
	_, err := leaf.Verify(x509.VerifyOptions{
		Roots: pool, Intermediates: inter, CurrentTime: at,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
	})
	return err
}
