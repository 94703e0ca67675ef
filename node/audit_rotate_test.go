package node_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/node"
	"paymentlog/node/audit"
)

// A node rotates its audit file past --audit-log-max-bytes, keeping
// --audit-log-max-files rotated files, and the trail verifies across them;
// negative limits are refused.
func TestAuditLogRotates(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	path := filepath.Join(t.TempDir(), "audit1.log")
	tc := mustStartClusterWith(t, 1, func(c *node.Config) {
		c.AuditLog, c.AuditLogMaxBytes, c.AuditLogMaxFiles = path, 2048, 3
	})
	tc.waitAlive(1)
	cl := tc.client(ctx)
	for i := range 20 {
		createTopic(ctx, t, tc, cl, client.TopicSpec{Name: fmt.Sprintf("t%d", i), Partitions: 1, ReplicationFactor: 1, MinISR: 1})
	}
	rotated, err := audit.RotatedFiles(path)
	if err != nil || len(rotated) != 3 {
		t.Fatalf("rotated files %v, %v; want the 3 newest kept", rotated, err)
	}
	reps, err := audit.VerifyTrail(path)
	if err != nil || reps[0].Anchor == "" {
		t.Fatalf("VerifyTrail: %v, %v; want it intact from a deleted file", reps, err)
	}
	for field, mutate := range map[string]func(*node.Config){
		"audit-log-max-bytes": func(c *node.Config) { c.AuditLogMaxBytes = -1 },
		"audit-log-max-files": func(c *node.Config) { c.AuditLogMaxFiles = -1 },
	} {
		c := node.DefaultConfig()
		c.ID, c.Addr, c.DataDir, c.Controllers = 1, "127.0.0.1:1", t.TempDir(), map[int32]string{1: "127.0.0.1:1"}
		if err := c.Validate(); err != nil {
			t.Fatalf("the default config: %v", err)
		}
		mutate(&c)
		var ce *node.ConfigError
		if err := c.Validate(); !errors.As(err, &ce) || ce.Field != field {
			t.Fatalf("%s -1: %v; want a ConfigError naming it", field, err)
		}
	}
}
