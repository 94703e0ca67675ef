package quic

import (
	"crypto/tls"
)

// RevokedPeer is a handshake an endpoint refused because the client
// presented a revoked certificate (Config.OnRevokedPeer).
type RevokedPeer struct {
	Addr   string // the client's address, host:port ("" if quic-go did not give it)
	Name   string // the certificate's common name
	Serial string // hex
	Err    error  // the refusal, as the handshake failed with it
}

// reportingRevoked is the server configuration for one handshake: st's, or
// when Config.OnRevokedPeer is set a copy whose check of revoked
// certificates also reports a refusal with the client's address (which
// quic-go passes in hello.Conn; tls.ConnectionState does not carry it).
func (e *Endpoint) reportingRevoked(st *tlsState, hello *tls.ClientHelloInfo) *tls.Config {
	tell := e.cfg.OnRevokedPeer
	if tell == nil {
		return st.server
	}
	addr := ""
	if hello != nil && hello.Conn != nil && hello.Conn.RemoteAddr() != nil {
		addr = hello.Conn.RemoteAddr().String()
	}
	c := st.server.Clone()
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		err := st.revoked.refusePeer(cs)
		if err != nil {
			leaf := cs.PeerCertificates[0]
			tell(RevokedPeer{Addr: addr, Name: leaf.Subject.CommonName, Serial: serialKey(leaf.SerialNumber), Err: err})
		}
		return err
	}
	return c
}
