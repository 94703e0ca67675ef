package node

import "paymentlog/metrics"

// writeTLSMetrics writes the node certificate's expiry and its reloads
// (nothing in TLS dev mode, which has no certificate to expire).
func (n *Node) writeTLSMetrics(w *metrics.Writer) {
	st := n.ep.TLSStatus()
	if st.Dev {
		return
	}
	w.Family("paymentlog_tls_certificate_expiry_timestamp_seconds", metrics.TypeGauge,
		"When this node's certificate (certificate=node) and the CA that signed it (certificate=ca) expire, in Unix seconds; "+
			"the CA's is absent while the certificate does not verify against ca.crt. Reissue before: the node reloads rotated files (--tls-reload-interval, SIGHUP).")
	w.Int(metrics.Labels{"certificate", "node"}, st.NotAfter.Unix())
	if !st.CANotAfter.IsZero() {
		w.Int(metrics.Labels{"certificate", "ca"}, st.CANotAfter.Unix())
	}
	w.Gauge("paymentlog_tls_trusted_cas",
		"CA certificates in the ca.crt this node has loaded: 2 on every node (min over the nodes) before a CA rotation reissues certificates, 1 after retire-ca.", int64(st.CAs))
	w.Family("paymentlog_tls_reloads_total", metrics.TypeCounter,
		"Reloads of the node's TLS files that changed what it presents or trusts (result=ok), and reloads refused because the files did not make a valid set (result=refused; the node kept its certificate and logged why).")
	w.Uint(metrics.Labels{"result", "ok"}, st.Reloads)
	w.Uint(metrics.Labels{"result", "refused"}, st.Refused)
	n.tlsRefused.write(w) // tls_refusals.go
}
