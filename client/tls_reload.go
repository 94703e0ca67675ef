package client

import "errors"

// ReloadTLS reads the client's ca.crt, certificate and key (Config.TLS) again;
// when they changed, new connections present and trust the new ones (see
// quic.Endpoint.ReloadTLS for what is refused). The client also does this by
// itself every quic.DefaultTLSReloadInterval, so a service whose certificate
// is rotated in place needs no restart; call it to take a rotation at once.
func (c *Client) ReloadTLS() (changed bool, err error) {
	if c.ep == nil {
		return false, errors.New("client: ReloadTLS on a client without a QUIC transport")
	}
	return c.ep.ReloadTLS()
}
