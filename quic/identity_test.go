package quic

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

func TestIdentityOf(t *testing.T) {
	uri := func(s string) *url.URL {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	cert := func(ou []string, uris ...string) *x509.Certificate {
		c := &x509.Certificate{Subject: pkix.Name{CommonName: "x", OrganizationalUnit: ou}}
		for _, s := range uris {
			c.URIs = append(c.URIs, uri(s))
		}
		return c
	}
	for _, tc := range []struct {
		name string
		cert *x509.Certificate
		want Identity
	}{
		{"node", cert([]string{"node"}, "paymentlog:node:3"), Identity{RoleNode, 3}},
		{"node max id", cert([]string{"node"}, "paymentlog:node:2147483647"), Identity{RoleNode, 2147483647}},
		{"node with an unrelated URI", cert([]string{"node"}, "https://example.com/x", "paymentlog:node:1"), Identity{RoleNode, 1}},
		{"client", cert([]string{"client"}), Identity{Role: RoleClient}},
		{"older build: no role", cert(nil), Identity{}},
		{"nil", nil, Identity{}},
		{"node OU without URI", cert([]string{"node"}), Identity{}},
		{"URI without node OU", cert(nil, "paymentlog:node:1"), Identity{}},
		{"client OU with node URI", cert([]string{"client"}, "paymentlog:node:1"), Identity{}},
		{"both OUs", cert([]string{"node", "client"}, "paymentlog:node:1"), Identity{}},
		{"two node URIs", cert([]string{"node"}, "paymentlog:node:1", "paymentlog:node:2"), Identity{}},
		{"same node URI twice", cert([]string{"node"}, "paymentlog:node:1", "paymentlog:node:1"), Identity{}},
		{"id zero", cert([]string{"node"}, "paymentlog:node:0"), Identity{}},
		{"negative id", cert([]string{"node"}, "paymentlog:node:-1"), Identity{}},
		{"leading zero", cert([]string{"node"}, "paymentlog:node:01"), Identity{}},
		{"plus sign", cert([]string{"node"}, "paymentlog:node:+1"), Identity{}},
		{"id overflows int32", cert([]string{"node"}, "paymentlog:node:2147483648"), Identity{}},
		{"not a number", cert([]string{"node"}, "paymentlog:node:one"), Identity{}},
		{"other paymentlog URI", cert([]string{"node"}, "paymentlog:admin:1"), Identity{}},
		{"hierarchical form", cert([]string{"node"}, "paymentlog://node/1"), Identity{}},
		{"query", cert([]string{"node"}, "paymentlog:node:1?x=2"), Identity{}},
		{"client with a stray paymentlog URI", cert([]string{"client"}, "paymentlog:client"), Identity{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := IdentityOf(tc.cert); got != tc.want {
				t.Fatalf("IdentityOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestIssueCertCarriesRole(t *testing.T) {
	cluster, _ := mustCertDirs(t)
	for name, want := range map[string]Identity{
		"node1":  {RoleNode, 1},
		"node2":  {RoleNode, 2},
		"client": {Role: RoleClient},
	} {
		got, err := LoadIdentity(TLSConfig{Dir: cluster, Name: name})
		if err != nil || got != want {
			t.Fatalf("%s: %+v, %v; want %+v", name, got, err, want)
		}
	}
	if err := IssueCert(t.TempDir(), "n", nil, CertOptions{NodeID: -1}); err == nil {
		t.Fatal("negative node id accepted")
	}
}

func TestCheckNodeCertificate(t *testing.T) {
	cluster, _ := mustCertDirs(t)
	if err := CheckNodeCertificate(TLSConfig{Dir: cluster, Name: "node1"}, 1); err != nil {
		t.Fatalf("node1 as node 1: %v", err)
	}
	if err := CheckNodeCertificate(TLSConfig{}, 1); err != nil {
		t.Fatalf("dev mode: %v", err)
	}
	// The node's own file (node<id>) with the wrong identity is re-issued in
	// place, keeping its hosts.
	_, rogue := mustCertDirs(t)
	for _, tc := range []struct {
		dir, name string
		id        int32
		says      string
		host      string // the certificate's hosts, kept by the fix
	}{
		{rogue, "node1", 1, "client certificate", " --force --host 127.0.0.1`"},
	} {
		err := CheckNodeCertificate(TLSConfig{Dir: tc.dir, Name: tc.name}, tc.id)
		if err == nil {
			t.Fatalf("%s accepted as node %d", tc.name, tc.id)
		}
		fix := "paymentlog cert issue --dir " + tc.dir + " --name " + tc.name + " --node-id "
		if msg := err.Error(); !strings.Contains(msg, tc.says) || !strings.Contains(msg, fix) || !strings.Contains(msg, "--force") ||
			!strings.Contains(msg, tc.host) {
			t.Fatalf("%s as node %d: %q lacks %q, the fix or %q", tc.name, tc.id, msg, tc.says, tc.host)
		}
	}
	// Someone else's certificate (a client's, another node's) is never to be
	// re-issued as this node's: the error says what it is and names the
	// node's own certificate to issue, without --force.
	for _, tc := range []struct {
		name string
		id   int32
		says string
	}{
		{"client", 1, "client certificate"},
		{"node1", 2, "node certificate for node 1"},
		{"node2", 1, "node certificate for node 2"},
	} {
		err := CheckNodeCertificate(TLSConfig{Dir: cluster, Name: tc.name}, tc.id)
		if err == nil {
			t.Fatalf("%s accepted as node %d", tc.name, tc.id)
		}
		own := fmt.Sprintf("paymentlog cert issue --dir %s --name node%d --node-id %d`", cluster, tc.id, tc.id)
		msg := err.Error()
		if !strings.Contains(msg, tc.says) || !strings.Contains(msg, own) || !strings.Contains(msg, "must not be re-issued") ||
			strings.Contains(msg, "--force") || strings.Contains(msg, "--name "+tc.name+" --node-id") {
			t.Fatalf("%s as node %d: %q; want %q, the node's own certificate %q and no re-issue of %s", tc.name, tc.id, msg, tc.says, own, tc.name)
		}
	}
	if err := CheckNodeCertificate(TLSConfig{Dir: cluster, Name: "missing"}, 1); err == nil ||
		!strings.Contains(err.Error(), filepath.Join(cluster, "missing.crt")) {
		t.Fatalf("missing certificate: %v", err)
	}
}

// FuzzNodeURI: a URI SAN accepted as a node identity is exactly the
// canonical paymentlog:node:<id> of its id, so no two spellings name one
// node and nothing else is read as a node.
func FuzzNodeURI(f *testing.F) {
	for _, s := range []string{"paymentlog:node:1", "paymentlog:node:2147483647", "paymentlog:node:01",
		"paymentlog:node:-1", "paymentlog:node:1?x", "PAYMENTLOG:node:1", "paymentlog:node:1#f", "paymentlog://node/1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := url.Parse(s)
		if err != nil {
			return
		}
		id, ok := parseNodeURI(u)
		if !ok {
			return
		}
		if id <= 0 {
			t.Fatalf("%q: node id %d", s, id)
		}
		if got := NodeURI(id).String(); u.Scheme != uriScheme || got != u.String() {
			t.Fatalf("%q (scheme %q) accepted as node %d, whose URI is %q", s, u.Scheme, id, got)
		}
	})
}
