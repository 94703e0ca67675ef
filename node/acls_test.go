package node_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/node"
	"paymentlog/quic"
	"paymentlog/wire"
)

// mustACLCerts creates a cluster CA, node certificates node1..nodeN and a
// client certificate for each name.
func mustACLCerts(t *testing.T, n int, clients ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "certs")
	if err := quic.InitCA(dir, quic.CertOptions{}); err != nil {
		t.Fatal(err)
	}
	for id := 1; id <= n; id++ {
		if err := quic.IssueCert(dir, fmt.Sprintf("node%d", id), []string{"127.0.0.1"}, quic.CertOptions{NodeID: int32(id)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range clients {
		if err := quic.IssueCert(dir, name, nil, quic.CertOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// aclClient connects as the client certificate name.
func aclClient(ctx context.Context, t *testing.T, tc *testCluster, certs, name string) *client.Client {
	t.Helper()
	c, err := client.New(ctx, client.Config{Bootstrap: tc.bootstrap(), Logger: testLogger(t),
		TLS: quic.TLSConfig{Dir: certs, Name: name}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// wantCode fails the test unless err carries the wire error code.
func wantCode(t *testing.T, what string, err error, code wire.ErrorCode) {
	t.Helper()
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != code {
		t.Fatalf("%s: %v, want %s", what, err, code)
	}
}

func allowACL(principal, op, rt, pt, name string) wire.ACLBinding {
	return wire.ACLBinding{Principal: principal, ResourceType: rt, PatternType: pt, Name: name, Operation: op, Permission: wire.PermissionAllow}
}

// produceAs produces one record with a producer of its own (so that a
// refused InitProducerID or Produce shows as its error) within 10 s.
func produceAs(ctx context.Context, c *client.Client, topic, value string) error {
	p, err := c.NewProducer(client.ProducerConfig{})
	if err != nil {
		return err
	}
	defer p.Close(context.Background())
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = p.ProduceSync(ctx, &client.Record{Topic: topic, Value: []byte(value), Partition: 0, PartitionSet: true})
	return err
}

// consumeFrom reads partition 0 of topic from offset 0 until it holds n
// records, or returns the first error.
func consumeFrom(ctx context.Context, c *client.Client, topic string, n int) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cons := c.NewConsumer(client.ConsumerConfig{MaxWait: 100 * time.Millisecond})
	defer cons.Close()
	cons.Assign([]client.TopicPartition{{Topic: topic, Partition: 0}}, 0)
	var out []string
	for len(out) < n {
		msgs, err := cons.Poll(ctx)
		if err != nil {
			return out, err
		}
		for _, m := range msgs {
			out = append(out, string(m.Value))
		}
	}
	return out, nil
}

// TestACLsEnforced: on a cluster whose nodes run --authorizer acl, a
// client certificate may do only what a binding allows it; a super user
// manages the bindings, and a change is in force on every node when
// CreateACLs/DeleteACLs return. Replication (node certificates) goes on
// regardless.
func TestACLsEnforced(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	certs := mustACLCerts(t, 3, "admin", "checkout", "billing", "mallory")
	tc := mustStartClusterWith(t, 3, func(c *node.Config) {
		c.TLSDir, c.CertName = certs, fmt.Sprintf("node%d", c.ID)
		c.Authorizer, c.SuperUsers = node.AuthorizerACL, []string{"User:admin"}
		withMetrics(c)
	})
	tc.waitAlive(3)
	admin := aclClient(ctx, t, tc, certs, "admin")
	checkout := aclClient(ctx, t, tc, certs, "checkout")
	billing := aclClient(ctx, t, tc, certs, "billing")
	mallory := aclClient(ctx, t, tc, certs, "mallory")

	// Without a binding a client may not even create a topic.
	_, err := checkout.Admin().CreateTopic(ctx, client.TopicSpec{Name: "orders", Partitions: 1, ReplicationFactor: 3, MinISR: 2})
	wantCode(t, "create topic without an ACL", err, wire.TopicAuthorizationFailed)
	createTopic(ctx, t, tc, admin, client.TopicSpec{Name: "payments", Partitions: 1, ReplicationFactor: 3, MinISR: 2})
	createTopic(ctx, t, tc, admin, client.TopicSpec{Name: "payments-eu", Partitions: 1, ReplicationFactor: 3, MinISR: 2})
	// Its metadata request is refused first (no describe).
	wantCode(t, "produce without an ACL", produceAs(ctx, checkout, "payments", "p0"), wire.TopicAuthorizationFailed)

	created, err := admin.Admin().CreateACLs(ctx, []wire.ACLBinding{
		allowACL("User:checkout", wire.OpWrite, wire.ResourceTopic, wire.PatternPrefixed, "payments"),
		{Principal: "User:checkout", ResourceType: wire.ResourceTopic, PatternType: wire.PatternLiteral, Name: "payments-eu",
			Operation: wire.OpWrite, Permission: wire.PermissionDeny},
		allowACL("User:billing", wire.OpRead, wire.ResourceTopic, wire.PatternLiteral, "payments"),
		allowACL("User:billing", wire.OpRead, wire.ResourceGroup, wire.PatternLiteral, "billing"),
	})
	if err != nil || created != 4 {
		t.Fatalf("CreateACLs: %d, %v; want 4 created", created, err)
	}
	// A retry creates nothing and succeeds.
	if again, err := admin.Admin().CreateACLs(ctx, []wire.ACLBinding{
		allowACL("User:billing", wire.OpRead, wire.ResourceTopic, wire.PatternLiteral, "payments")}); err != nil || again != 0 {
		t.Fatalf("CreateACLs again: %d, %v; want 0 created", again, err)
	}

	// checkout writes payments (prefixed allow), not payments-eu (deny wins).
	for i := range 3 {
		if err := produceAs(ctx, checkout, "payments", fmt.Sprintf("p%d", i)); err != nil {
			t.Fatalf("checkout produce %d: %v", i, err)
		}
	}
	wantCode(t, "checkout produce to payments-eu", produceAs(ctx, checkout, "payments-eu", "x"), wire.TopicAuthorizationFailed)
	if _, err := consumeFrom(ctx, checkout, "payments", 1); err == nil {
		t.Fatal("checkout read payments without read")
	} else {
		wantCode(t, "checkout consume", err, wire.TopicAuthorizationFailed)
	}

	// billing reads payments and commits in its own group only.
	got, err := consumeFrom(ctx, billing, "payments", 3)
	if err != nil || !slices.Equal(got, []string{"p0", "p1", "p2"}) {
		t.Fatalf("billing consume: %v, %v", got, err)
	}
	wantCode(t, "billing produce", produceAs(ctx, billing, "payments", "x"), wire.ClusterAuthorizationFailed)
	// Deleting records needs delete on the topic, which reading does not give.
	_, err = billing.Admin().DeleteRecords(ctx, "payments", map[int32]int64{0: 1})
	wantCode(t, "billing deletes records", err, wire.TopicAuthorizationFailed)
	commit := func(c *client.Client, group string) error {
		return c.Admin().CommitOffsets(ctx, group, []wire.GroupOffset{{Topic: "payments", Partition: 0, Offset: 3, LeaderEpoch: -1}})
	}
	if err := commit(billing, "billing"); err != nil {
		t.Fatalf("billing commit: %v", err)
	}
	wantCode(t, "billing commit in another group", commit(billing, "audit"), wire.GroupAuthorizationFailed)
	// The group list shows billing only the groups it may describe.
	if err := commit(admin, "audit"); err != nil {
		t.Fatalf("admin commit: %v", err)
	}
	groups, err := billing.Admin().ListGroups(ctx)
	if err != nil || len(groups) != 1 || groups[0].Group != "billing" {
		t.Fatalf("billing lists groups %+v (%v), want billing alone", groups, err)
	}
	if all, err := admin.Admin().ListGroups(ctx); err != nil || len(all) != 2 {
		t.Fatalf("admin lists groups %+v (%v), want 2", all, err)
	}

	// mallory sees no topic, reads nothing, and cannot grant itself.
	md, err := mallory.Admin().ListTopics(ctx)
	if err != nil || len(md) != 0 {
		t.Fatalf("mallory lists topics %v (%v), want none", md, err)
	}
	if _, err := consumeFrom(ctx, mallory, "payments", 1); err == nil {
		t.Fatal("mallory read payments")
	}
	_, err = mallory.Admin().CreateACLs(ctx, []wire.ACLBinding{allowACL("User:mallory", wire.OpAll, wire.ResourceTopic, wire.PatternLiteral, "*")})
	wantCode(t, "mallory grants itself", err, wire.ClusterAuthorizationFailed)
	_, err = mallory.Admin().DescribeACLs(ctx, wire.ACLFilter{})
	wantCode(t, "mallory lists ACLs", err, wire.ClusterAuthorizationFailed)

	list, err := admin.Admin().DescribeACLs(ctx, wire.ACLFilter{Principal: "User:checkout"})
	if err != nil || len(list.ACLs) != 2 || !list.Enforced {
		t.Fatalf("DescribeACLs(checkout): %+v, %v; want 2 bindings, enforced", list, err)
	}

	// Removing checkout's bindings takes its write away on every node.
	deleted, err := admin.Admin().DeleteACLs(ctx, wire.ACLFilter{Principal: "User:checkout"})
	if err != nil || len(deleted) != 2 {
		t.Fatalf("DeleteACLs: %v, %v; want 2", deleted, err)
	}
	for id := int32(1); id <= 3; id++ {
		if n := tc.node(id).Store().Image().ACLs().Len(); n != 2 {
			t.Fatalf("node %d holds %d bindings after the delete, want 2", id, n)
		}
	}
	err = produceAs(ctx, checkout, "payments", "late")
	if err == nil || !(strings.Contains(err.Error(), "AuthorizationFailed")) {
		t.Fatalf("checkout produce after its ACLs were removed: %v, want an authorization failure", err)
	}
	if starts, err := admin.Admin().DeleteRecords(ctx, "payments", map[int32]int64{0: 1}); err != nil || starts[0] != 1 {
		t.Fatalf("admin deletes records: %v, %v", starts, err)
	}
	// Replication was never refused: the partition's ISR is whole.
	p, _ := tc.image().Partition("payments", 0)
	if len(p.ISR) != 3 {
		t.Fatalf("payments-0 ISR %v, want 3 replicas", p.ISR)
	}
	// Every kind of refusal was counted (on the nodes that answered).
	for _, r := range []string{wire.ResourceTopic, wire.ResourceGroup, wire.ResourceCluster} {
		sum := 0.0
		for id := int32(1); id <= 3; id++ {
			sum += value(t, scrape(t, tc.node(id).MetricsAddr()), "paymentlog_authorization_denied_total", "resource", r)
		}
		if sum < 1 {
			t.Errorf("paymentlog_authorization_denied_total{resource=%q} = %v over the nodes, want >= 1", r, sum)
		}
	}
}

// TestACLsNotEnforcedByDefault: bindings stored in a cluster whose nodes
// run without --authorizer acl restrict nothing, and DescribeACLs says so.
func TestACLsNotEnforcedByDefault(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	certs := mustACLCerts(t, 1, "mallory")
	tc := mustStartTLSCluster(t, 1, certs)
	tc.waitAlive(1)
	c := aclClient(ctx, t, tc, certs, "mallory")
	if _, err := c.Admin().CreateACLs(ctx, []wire.ACLBinding{
		{Principal: "User:mallory", ResourceType: wire.ResourceTopic, PatternType: wire.PatternLiteral, Name: "*",
			Operation: wire.OpAll, Permission: wire.PermissionDeny}}); err != nil {
		t.Fatal(err)
	}
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "payments", Partitions: 1, ReplicationFactor: 1, MinISR: 1})
	if err := produceAs(ctx, c, "payments", "x"); err != nil {
		t.Fatalf("produce with a deny binding not enforced: %v", err)
	}
	list, err := c.Admin().DescribeACLs(ctx, wire.ACLFilter{})
	if err != nil || len(list.ACLs) != 1 || list.Enforced {
		t.Fatalf("DescribeACLs: %+v, %v; want 1 binding, not enforced", list, err)
	}
}

// TestAuthorizerNeedsTLS: --authorizer acl without mutual TLS (nobody has a
// name) is a configuration error, as is a malformed super user.
func TestAuthorizerNeedsTLS(t *testing.T) {
	cfg := node.DefaultConfig()
	cfg.ID, cfg.Addr, cfg.DataDir = 1, "127.0.0.1:1", t.TempDir()
	cfg.Controllers = map[int32]string{1: cfg.Addr}
	cfg.Authorizer = node.AuthorizerACL
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "tls-dir") {
		t.Fatalf("acl without TLS: %v", err)
	}
	cfg.TLSDir = t.TempDir()
	cfg.SuperUsers = []string{"admin"}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "super-users") {
		t.Fatalf("super user without User:: %v", err)
	}
	cfg.SuperUsers = []string{"User:admin"}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg.Authorizer = "ranger"
	if err := cfg.Validate(); err == nil {
		t.Fatal("unknown authorizer accepted")
	}
}

// Bindings with a host apply to clients connecting from it: an allow from
// 127.0.0.0/8 lets a local client write, one from 10.0.0.0/8 does not, and
// a deny from 127.0.0.1 wins over an allow from anywhere.
func TestACLHostsEnforced(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	certs := mustACLCerts(t, 1, "admin", "checkout")
	tc := mustStartClusterWith(t, 1, func(c *node.Config) {
		c.TLSDir, c.CertName = certs, fmt.Sprintf("node%d", c.ID)
		c.Authorizer, c.SuperUsers = node.AuthorizerACL, []string{"User:admin"}
	})
	tc.waitAlive(1)
	admin := aclClient(ctx, t, tc, certs, "admin")
	checkout := aclClient(ctx, t, tc, certs, "checkout")
	createTopic(ctx, t, tc, admin, client.TopicSpec{Name: "payments", Partitions: 1, ReplicationFactor: 1, MinISR: 1})
	write := func(host, perm string) wire.ACLBinding {
		b := allowACL("User:checkout", wire.OpWrite, wire.ResourceTopic, wire.PatternLiteral, "payments")
		b.Host, b.Permission = host, perm
		return b
	}
	grant := func(bs ...wire.ACLBinding) {
		t.Helper()
		if _, err := admin.Admin().CreateACLs(ctx, bs); err != nil {
			t.Fatal(err)
		}
	}
	revoke := func(f wire.ACLFilter) {
		t.Helper()
		if _, err := admin.Admin().DeleteACLs(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	// Idempotent producing needs write on some topic (InitProducerID).
	grant(write("10.0.0.0/8", wire.PermissionAllow))
	wantCode(t, "write allowed only from 10/8", produceAs(ctx, checkout, "payments", "a"), wire.TopicAuthorizationFailed)
	grant(write("127.0.0.0/8", wire.PermissionAllow))
	if err := produceAs(ctx, checkout, "payments", "b"); err != nil {
		t.Fatalf("write allowed from 127/8: %v", err)
	}
	revoke(wire.ACLFilter{Principal: "User:checkout"})
	grant(write("", wire.PermissionAllow), write("127.0.0.1", wire.PermissionDeny))
	wantCode(t, "write denied from 127.0.0.1", produceAs(ctx, checkout, "payments", "c"), wire.TopicAuthorizationFailed)
	revoke(wire.ACLFilter{Principal: "User:checkout", Host: "127.0.0.1"})
	if err := produceAs(ctx, checkout, "payments", "d"); err != nil {
		t.Fatalf("write after the deny was removed: %v", err)
	}
}
