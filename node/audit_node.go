package node

import (
	"errors"

	"paymentlog/node/audit"
	"paymentlog/quic"
	"paymentlog/wire"
)

// auditSyslogInvalid checks Config.AuditSyslog and AuditSyslogTLS: an
// address, and TLS options only with tls://, whose files load.
func auditSyslogInvalid(addr string, t audit.ForwardTLS) error {
	if addr == "" {
		return errors.New("a CA, server name or client certificate for the syslog collector needs --audit-syslog tls://HOST:PORT")
	}
	return t.Check(addr)
}

// selfWho is the node itself as the audit trail names it in its node lines
// (start, stop, TLS reloads): its certificate's principal and its address.
func (n *Node) selfWho() audit.Who {
	who := audit.Who{Principal: wire.PrincipalPrefix + n.cfg.CertName, Authenticated: n.cfg.TLSDir != "", Addr: n.cfg.Addr}
	if n.ep != nil {
		who.Addr = n.ep.Addr()
	}
	return who
}

// auditRefusedPeer records a handshake refused because of the peer's
// certificate (PCI DSS 10.2.1.4: invalid access attempts), and counts it
// (tls_refusals.go). Inbound, a client's: none, one of an unknown CA,
// expired, not yet valid, not for clients, or revoked; clients and other
// nodes connect through the same endpoint: both are recorded. Outbound, the
// certificate of a peer the node dialed (another node, for replication or
// raft: every dial the node makes goes through its endpoint): the same, or
// not for the address dialed. Either side, a certificate the handshake
// accepted but for another node than the one a request claims or the node
// dialed (quic.RefusedWrongNode: the call is refused). As a denied line, op
// "connect", on the cluster, result the reason (the audit package writes
// one a minute per side, peer host, reason and certificate).
func (n *Node) auditRefusedPeer(p quic.RefusedPeer) {
	n.tlsRefused.add(p.Side, p.Reason)
	who := audit.Who{Addr: p.Addr}
	if p.Reason != quic.RefusedNoCertificate {
		who.Principal = wire.PrincipalPrefix + p.Name
	}
	side := audit.SideInbound
	if p.Side == quic.SideOutbound {
		side = audit.SideOutbound
	}
	n.audit.RefusedConnect(who, wire.ResourceCluster, wire.ClusterResourceName, audit.RefusedHandshake{
		Side: side, ServerName: p.ServerName, Reason: p.Reason, Message: p.Err.Error(),
		Serial: p.Serial, Issuer: p.Issuer, NotBefore: p.NotBefore, NotAfter: p.NotAfter, ExpectedNode: p.ExpectedNode})
}

// auditTLSReload records a reload of the node's TLS files: a new
// certificate, CA bundle or revocation list in force, or a refused one
// (PCI DSS 10.2.1.5: changes to authentication credentials).
func (n *Node) auditTLSReload(ev quic.TLSReload) {
	n.audit.TLSReloaded(n.selfWho(), ev, ev.Err)
}
