package node_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/node"
	"paymentlog/wire"
)

// auditLine is what the test reads of an audit line (node/audit's format).
type auditLine struct {
	Node          int32           `json:"node"`
	Event         string          `json:"event"`
	Principal     string          `json:"principal"`
	Authenticated bool            `json:"authenticated"`
	Addr          string          `json:"addr"`
	Op            string          `json:"op"`
	Resource      string          `json:"resource"`
	ResourceName  string          `json:"resource_name"`
	Request       json.RawMessage `json:"request"`
	Result        string          `json:"result"`
	Message       string          `json:"message"`
	Response      json.RawMessage `json:"response"`
	Details       json.RawMessage `json:"details"`
}

func (l auditLine) String() string {
	b, _ := json.Marshal(l)
	return string(b)
}

// readAudit returns the lines of every node's audit log.
func readAudit(t *testing.T, paths map[int32]string) []auditLine {
	t.Helper()
	var out []auditLine
	for id, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var l auditLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil || l.Node != id {
				t.Fatalf("node %d line %q: %v", id, sc.Text(), err)
			}
			out = append(out, l)
		}
		f.Close()
	}
	return out
}

// The audit trail: every request that changes the cluster is recorded once,
// by the node that answered it (never a NotController redirect), with the
// certificate's principal, the request and the result; an operator's
// offset commit is recorded and a consumer's own is not; a request refused
// by ACL is recorded as denied where it was refused, and both kinds are
// counted in /metrics.
func TestAuditTrail(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	certs := mustACLCerts(t, 3, "admin", "mallory")
	dir := t.TempDir()
	paths := map[int32]string{}
	tc := mustStartClusterWith(t, 3, func(c *node.Config) {
		c.TLSDir, c.CertName = certs, fmt.Sprintf("node%d", c.ID)
		c.Authorizer, c.SuperUsers = node.AuthorizerACL, []string{"User:admin"}
		c.AuditLog = filepath.Join(dir, fmt.Sprintf("audit%d.log", c.ID))
		paths[c.ID] = c.AuditLog
		withMetrics(c)
	})
	tc.waitAlive(3)
	admin := aclClient(ctx, t, tc, certs, "admin")
	mallory := aclClient(ctx, t, tc, certs, "mallory")

	createTopic(ctx, t, tc, admin, client.TopicSpec{Name: "payments", Partitions: 1, ReplicationFactor: 3, MinISR: 2})
	if err := admin.Admin().AlterTopicConfigs(ctx, "payments", client.ConfigChange{Set: map[string]string{"retention.ms": "86400000"}}); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if err := produceAs(ctx, admin, "payments", fmt.Sprintf("p%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := admin.Admin().DeleteRecords(ctx, "payments", map[int32]int64{0: 2}); err != nil {
		t.Fatal(err)
	}
	if err := admin.Admin().CommitOffsets(ctx, "billing", []wire.GroupOffset{{Topic: "payments", Partition: 0, Offset: 3, LeaderEpoch: -1}}); err != nil {
		t.Fatal(err)
	}
	cons := admin.NewConsumer(client.ConsumerConfig{})
	cons.Assign([]client.TopicPartition{{Topic: "payments", Partition: 0}}, 2)
	if err := cons.CommitOffsets(ctx, "app", map[client.TopicPartition]int64{{Topic: "payments", Partition: 0}: 4}); err != nil {
		t.Fatal(err)
	}
	cons.Close()
	_, err := mallory.Admin().CreateTopic(ctx, client.TopicSpec{Name: "stolen", Partitions: 1, ReplicationFactor: 3, MinISR: 2})
	wantCode(t, "mallory creates a topic", err, wire.TopicAuthorizationFailed)
	if err := admin.Admin().DeleteGroup(ctx, "billing"); err != nil {
		t.Fatal(err)
	}

	lines := readAudit(t, paths)
	admins := map[string][]auditLine{}
	var refused bool // mallory's CreateTopic has its admin line too, refused
	var denied []auditLine
	for _, l := range lines {
		if l.Result == wire.NotController.String() {
			t.Fatalf("a NotController redirect was recorded: %+v", l)
		}
		switch {
		case l.Event == "admin" && l.Principal == "User:mallory":
			if l.Op != "CreateTopic" || l.Result != wire.TopicAuthorizationFailed.String() || !strings.Contains(string(l.Request), `"Name":"stolen"`) {
				t.Fatalf("mallory's admin line %v; want its CreateTopic, refused", l)
			}
			refused = true
		case l.Event == "admin":
			admins[l.Op] = append(admins[l.Op], l)
		case l.Event == "denied":
			denied = append(denied, l)
		case l.Event == "access" || l.Event == "node": // TestAuditTrailNodeAndAccessLines
		default:
			t.Fatalf("event %q: %+v", l.Event, l)
		}
	}
	for _, c := range []struct{ op, inRequest string }{
		{"CreateTopic", `"Name":"payments"`},
		{"AlterConfigs", `"retention.ms":"86400000"`},
		{"DeleteRecords", `"Offset":2`},
		{"OffsetCommit", `"Group":"billing"`},
		{"DeleteGroup", `"Group":"billing"`},
	} {
		ls := admins[c.op]
		if len(ls) != 1 {
			t.Fatalf("%d %s lines, want 1: %+v", len(ls), c.op, ls)
		}
		l := ls[0]
		if l.Principal != "User:admin" || !l.Authenticated || !strings.HasPrefix(l.Addr, "127.0.0.1:") || l.Result != "ok" ||
			!strings.Contains(string(l.Request), c.inRequest) {
			t.Fatalf("%s line %+v (request %s); want admin's, ok, with %s", c.op, l, l.Request, c.inRequest)
		}
	}
	part, _ := tc.image().Partition("payments", 0)
	if dr := admins["DeleteRecords"][0]; dr.Node != part.Leader || !strings.Contains(string(dr.Response), `"LowWatermark":2`) {
		t.Fatalf("DeleteRecords line %+v (response %s); want the leader's, low watermark 2", dr, dr.Response)
	}
	for _, l := range admins["OffsetCommit"] {
		if strings.Contains(string(l.Request), `"Group":"app"`) {
			t.Fatalf("a consumer's own commit was recorded: %s", l.Request)
		}
	}
	if !refused {
		t.Fatal("no admin line for mallory's refused CreateTopic")
	}
	var malloryDenied bool
	for _, l := range denied {
		if l.Principal == "User:mallory" && l.Op == wire.OpCreate && l.Resource == wire.ResourceTopic && l.ResourceName == "stolen" &&
			l.Result == wire.TopicAuthorizationFailed.String() && strings.Contains(l.Message, "may not create topic") {
			malloryDenied = true
		}
	}
	if !malloryDenied {
		t.Fatalf("no denied line for mallory's CreateTopic among %+v", denied)
	}
	var written float64
	for id := range paths {
		written += value(t, scrape(t, tc.node(id).MetricsAddr()), "paymentlog_audit_lines_total")
	}
	if int(written) != len(lines) {
		t.Fatalf("paymentlog_audit_lines_total sums to %v; the files hold %d lines", written, len(lines))
	}
}
