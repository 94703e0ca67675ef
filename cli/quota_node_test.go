package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/quic"
)

// These tests run `paymentlog quota` against real in-process nodes. They
// need the node side of client quotas: the handlers of frame types 32-33
// (quotas kept in the metadata log, changed through the active
// controller) and the brokers' throttling of Produce and Fetch. Against a
// node without them they fail (the requests are refused as an unknown
// frame type).

// quota set, list and delete on a two-node cluster: every node applied a
// change when the command returns, so list (from any node) shows it.
// Needs the node handlers (see above).
func TestQuotaOnNodes(t *testing.T) {
	bs := "--bootstrap=" + startNodes(t, 2)
	run := func(args ...string) string {
		t.Helper()
		out, errOut, code := runClientCLI(t, nil, append(args, bs, "--timeout", "30s")...)
		if code != 0 {
			t.Fatalf("%v: exit %d, stderr %q", args, code, errOut)
		}
		return out
	}
	if out := run("quota", "list"); out != "no quotas\n" {
		t.Fatalf("list of none: %q", out)
	}
	run("quota", "set", "--principal", "billing", "--producer-byte-rate", "1MiB", "--consumer-byte-rate", "2MiB")
	run("quota", "set", "--default", "--producer-byte-rate", "512KiB")
	want := "ENTITY        PRODUCER BYTE RATE  CONSUMER BYTE RATE\n" +
		"(default)     524288 (512 KiB/s)  -\n" +
		"User:billing  1048576 (1 MiB/s)   2097152 (2 MiB/s)\n" +
		quotaPerNodeNote + "\n"
	if out := run("quota", "list"); out != want {
		t.Fatalf("list:\n%s\nwant:\n%s", out, want)
	}
	if out := run("quota", "list", "--json"); out != `{"quotas":[{"principal":"","default":true,"producer_byte_rate":524288,"consumer_byte_rate":null},`+
		`{"principal":"User:billing","default":false,"producer_byte_rate":1048576,"consumer_byte_rate":2097152}]}`+"\n" {
		t.Fatalf("list --json: %s", out)
	}
	run("quota", "delete", "--principal", "billing", "--consumer-byte-rate")
	run("quota", "delete", "--default")
	want = "ENTITY        PRODUCER BYTE RATE  CONSUMER BYTE RATE\n" +
		"User:billing  1048576 (1 MiB/s)   -\n" +
		quotaPerNodeNote + "\n"
	if out := run("quota", "list"); out != want {
		t.Fatalf("list after delete:\n%s\nwant:\n%s", out, want)
	}
	run("quota", "delete", "--principal", "billing")
	if out := run("quota", "list"); out != "no quotas\n" {
		t.Fatalf("list after deleting every quota: %q", out)
	}
}

// Under mutual TLS with ACLs enforced: a principal that may not describe
// (alter) the cluster may not list (set) quotas; a super user sets a
// producer quota on a principal, and that principal's producer sees its
// answers held back (ProducerStats). Needs the node handlers and the
// brokers' throttling (see above).
func TestQuotaThrottlesOnTLSNodes(t *testing.T) {
	bs, certs := startACLNodes(t, 2)
	as := func(who string, args ...string) (string, string, int) {
		t.Helper()
		return runClientCLI(t, nil, append(args, "--bootstrap="+bs, "--tls-dir", certs, "--cert-name", who, "--timeout", "30s")...)
	}
	ok := func(who string, args ...string) string {
		t.Helper()
		out, errOut, code := as(who, args...)
		if code != 0 {
			t.Fatalf("%s: %v: exit %d, stderr %q", who, args, code, errOut)
		}
		return out
	}
	_, errOut, code := as("billing", "quota", "list")
	oneErrorLine(t, "billing: quota list", code, errOut, 1, "ClusterAuthorizationFailed")
	_, errOut, code = as("billing", "quota", "set", "--principal", "billing", "--producer-byte-rate", "1GiB")
	oneErrorLine(t, "billing: quota set", code, errOut, 1, "ClusterAuthorizationFailed")

	ok("admin", "topic", "create", "payments", "--partitions", "1", "--replication-factor", "2", "--min-insync-replicas", "1")
	ok("admin", "acl", "add", "--principal", "billing", "--operation", "write", "--topic", "payments")
	ok("admin", "quota", "set", "--principal", "billing", "--producer-byte-rate", "1KiB")
	if out := ok("admin", "quota", "list"); !strings.Contains(out, "\nUser:billing  1024 (1 KiB/s)      -\n") {
		t.Fatalf("list:\n%s", out)
	}

	// 1 KiB/s with a second's burst: the first 1.5 KiB batch puts billing
	// in debt, so the next answers come late.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := client.New(ctx, client.Config{Bootstrap: []string{bs}, TLS: quic.TLSConfig{Dir: certs, Name: "billing"}})
	if err != nil {
		t.Fatal(err)
	}
	defer closeClient(c)
	p, err := c.NewProducer(client.ProducerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	value := []byte(strings.Repeat("x", 1500))
	for i := 0; i < 3; i++ {
		if _, err := p.ProduceSync(ctx, &client.Record{Topic: "payments", Value: value}); err != nil {
			t.Fatal(err)
		}
	}
	if s := p.Stats(); s.ThrottledRequests < 2 || s.ThrottleTime < time.Second {
		t.Fatalf("%d of %d produce answers throttled, for %v; want at least 2, for at least 1s", s.ThrottledRequests, s.Requests, s.ThrottleTime)
	}
}
