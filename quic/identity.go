package quic

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Role is what a certificate allows its holder to do, read from the
// certificate once at handshake (see [Peer]).
//
// # Certificate format (part of the security contract: never change)
//
// `paymentlog cert issue` ([IssueCert]) writes the role into the leaf
// certificate signed by the cluster CA:
//
//	node certificate:   Subject OU = "node",   URI SAN = "paymentlog:node:<id>"  (id: decimal, 1..2^31-1)
//	client certificate: Subject OU = "client", no paymentlog: URI SAN
//
// The URI SAN is the node's identity; the OU makes the role visible to
// `openssl x509 -text`. A certificate is a node certificate only when both
// agree: OU "node" (and not "client") and exactly one paymentlog: URI, of the
// form above. It is a client certificate with OU "client" (and not "node")
// and no paymentlog: URI. Anything else — in particular a certificate issued
// by a build older than roles, which has neither — has [RoleNone] and is
// treated as a client by the authorizer, so a forgotten re-issue fails
// closed, with an error naming the fix.
type Role uint8

const (
	// RoleNone: no role in the certificate (an older build's certificate, or
	// a malformed one), or no verified certificate at all (dev mode).
	RoleNone Role = iota
	// RoleClient may send client requests (Metadata, Produce, Fetch, ...).
	RoleClient
	// RoleNode may also send node-to-node requests, as the node id it carries.
	RoleNode
)

func (r Role) String() string {
	switch r {
	case RoleClient:
		return "client"
	case RoleNode:
		return "node"
	}
	return "none"
}

// Certificate markers (see Role).
const (
	ouNode        = "node"
	ouClient      = "client"
	uriScheme     = "paymentlog"
	nodeURIPrefix = "node:"
)

// NodeURI is the URI SAN of node id's certificate: paymentlog:node:<id>.
func NodeURI(id int32) *url.URL {
	return &url.URL{Scheme: uriScheme, Opaque: nodeURIPrefix + strconv.FormatInt(int64(id), 10)}
}

// Identity is the role (and, for a node, the node id) a certificate carries.
type Identity struct {
	Role   Role
	NodeID int32 // > 0 with RoleNode, else 0
}

func (id Identity) String() string {
	switch id.Role {
	case RoleNode:
		return fmt.Sprintf("node certificate for node %d", id.NodeID)
	case RoleClient:
		return "client certificate"
	}
	return "certificate without a paymentlog role (issued by an older build?)"
}

// IdentityOf reads the role from a certificate (see Role for the format). It
// is pure: whether the certificate is trusted is the TLS handshake's
// business, done before.
func IdentityOf(cert *x509.Certificate) Identity {
	if cert == nil {
		return Identity{}
	}
	var (
		ids []int32
		bad bool
	)
	for _, u := range cert.URIs {
		if u == nil || u.Scheme != uriScheme {
			continue
		}
		if id, ok := parseNodeURI(u); ok {
			ids = append(ids, id)
		} else {
			bad = true
		}
	}
	ou := cert.Subject.OrganizationalUnit
	isNode, isClient := slices.Contains(ou, ouNode), slices.Contains(ou, ouClient)
	switch {
	case bad || isNode == isClient:
		return Identity{}
	case isNode && len(ids) == 1:
		return Identity{Role: RoleNode, NodeID: ids[0]}
	case isClient && len(ids) == 0:
		return Identity{Role: RoleClient}
	}
	return Identity{}
}

// parseNodeURI parses paymentlog:node:<id>, id in 1..2^31-1 written in
// canonical decimal (no sign, no leading zeros): the only accepted spelling
// of a node id is NodeURI's (FuzzNodeURI checks).
func parseNodeURI(u *url.URL) (int32, bool) {
	// ForceQuery: "paymentlog:node:1?" has an empty query but is not
	// NodeURI's spelling (found by FuzzNodeURI).
	if u.Scheme != uriScheme || u.Opaque == "" || u.Host != "" || u.Path != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.User != nil {
		return 0, false
	}
	s, ok := strings.CutPrefix(u.Opaque, nodeURIPrefix)
	if !ok || s == "" || s[0] == '0' || s[0] == '+' || s[0] == '-' {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n <= 0 {
		return 0, false
	}
	return int32(n), true
}

// LoadIdentity reads the identity of cfg's own certificate (Dir/Name.crt).
// Nodes check theirs at start: see CheckNodeCertificate.
func LoadIdentity(cfg TLSConfig) (Identity, error) {
	cert, err := loadLeaf(cfg)
	if err != nil {
		return Identity{}, err
	}
	return IdentityOf(cert), nil
}

// loadLeaf reads and parses cfg's certificate file (not its key).
func loadLeaf(cfg TLSConfig) (*x509.Certificate, error) {
	path := filepath.Join(cfg.Dir, cfg.Name+".crt")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("quic: read certificate: %w", err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("quic: %s: no PEM certificate", path)
	}
	cert, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("quic: %s: %w", path, err)
	}
	return cert, nil
}

// CheckNodeCertificate returns an error, naming the fix, unless cfg's
// certificate is a node certificate for node id. Dev mode (no Dir) passes.
//
// The fix re-issues the certificate in place (--force) only when the file is
// the node's own: named node<id> (the default --cert-name), or without a role
// (an older build's). A client certificate or another node's under any other
// name belongs to someone else: re-issued as node id's it would lock its
// holder out (a client's tools, the other node), so the error says what is
// wrong and names a certificate of the node's own to issue instead.
func CheckNodeCertificate(cfg TLSConfig, id int32) error {
	if cfg.Dev() {
		return nil
	}
	cert, err := loadLeaf(cfg)
	if err != nil {
		return err
	}
	got := IdentityOf(cert)
	if got.Role == RoleNode && got.NodeID == id {
		return nil
	}
	path := filepath.Join(cfg.Dir, cfg.Name+".crt")
	own := fmt.Sprintf("node%d", id)
	if got.Role != RoleNone && cfg.Name != own {
		return fmt.Errorf("quic: %s is a %s, not a node certificate for node %d: it belongs to another holder and must not be re-issued as node %d's; "+
			"give node %d a node certificate of its own with `paymentlog cert issue --dir %s --name %s --node-id %d` (add --host with the node's addresses; "+
			"node start reads %s.crt unless --cert-name names another)",
			path, got, id, id, id, cfg.Dir, own, id, own)
	}
	// The fix keeps the certificate's hosts: re-issued without --host it
	// would be valid for 127.0.0.1 and localhost only, and a node elsewhere
	// would fail every handshake instead.
	var hosts []string
	for _, ip := range cert.IPAddresses {
		hosts = append(hosts, ip.String())
	}
	hosts = append(hosts, cert.DNSNames...)
	hostArg := ""
	if len(hosts) > 0 {
		hostArg = " --host " + strings.Join(hosts, ",")
	}
	return fmt.Errorf("quic: %s is a %s, not a node certificate for node %d: issue one with `paymentlog cert issue --dir %s --name %s --node-id %d --force%s`",
		path, got, id, cfg.Dir, cfg.Name, id, hostArg)
}
