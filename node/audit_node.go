package node

import (
	"paymentlog/node/audit"
	"paymentlog/quic"
	"paymentlog/wire"
)

// auditSyslogInvalid checks Config.AuditSyslog.
func auditSyslogInvalid(addr string) error {
	_, _, err := audit.ParseForwardAddr(addr)
	return err
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

// auditRevokedPeer records a handshake refused because the client
// presented a revoked certificate (PCI DSS 10.2.1.4: invalid access
// attempts), as a denied line: op "connect", on the cluster.
func (n *Node) auditRevokedPeer(p quic.RevokedPeer) {
	n.audit.Denied(audit.Who{Principal: wire.PrincipalPrefix + p.Name, Addr: p.Addr}, audit.OpConnect, wire.ResourceCluster,
		wire.ClusterResourceName, audit.ResultRevoked, p.Err.Error())
}

// auditTLSReload records a reload of the node's TLS files: a new
// certificate, CA bundle or revocation list in force, or a refused one
// (PCI DSS 10.2.1.5: changes to authentication credentials).
func (n *Node) auditTLSReload(ev quic.TLSReload) {
	n.audit.TLSReloaded(n.selfWho(), ev, ev.Err)
}
