package quic

// TLSReload describes one reload of an endpoint's TLS files, as
// Config.OnTLSReload is told of it.
type TLSReload struct {
	// Serial is the certificate the endpoint presents after the reload
	// (hex; the one it kept when refused), PreviousSerial the one before
	// ("" when refused).
	Serial         string `json:"serial"`
	PreviousSerial string `json:"previous_serial,omitempty"`
	// CAChanged and RevokedChanged say whether ca.crt and revoked.txt
	// changed (and closed the connections they no longer trust).
	CAChanged      bool `json:"ca_changed"`
	RevokedChanged bool `json:"revoked_changed"`
	// CAs and Revoked count the CA certificates trusted and the serials
	// refused after the reload.
	CAs     int `json:"cas"`
	Revoked int `json:"revoked"`
	// Err is why the reload was refused (the endpoint kept what it had).
	Err error `json:"-"`
}

// tellReload passes ev to Config.OnTLSReload, if set.
func (e *Endpoint) tellReload(ev TLSReload) {
	if e.cfg.OnTLSReload != nil {
		e.cfg.OnTLSReload(ev)
	}
}

// serialOf is the serial of the certificate st presents, in hex.
func serialOf(st *tlsState) string { return st.leaf.SerialNumber.Text(16) }
