package cli

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"paymentlog/client"
)

// A target where the offset syncs topic cannot be created (here: ACLs
// let the mirror's principal create and write its topic, not the syncs
// topic) is still mirrored, without syncs, saying so once; with
// --sync-group-offsets the mirror refuses to start, copying nothing.
func TestMirrorWithoutOffsetSyncsTopic(t *testing.T) {
	src := startOneNode(t)
	dst, certs := startACLNodes(t, 1)
	srcC := testClient(t, src)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin, err := clientOptions{bootstrap: []string{dst}, tlsDir: certs, certName: "admin", logLevel: slog.LevelError}.newClient(ctx, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer closeClient(admin)
	as := func(who string, args ...string) (string, int) {
		t.Helper()
		args = append(args, "--bootstrap", dst, "--tls-dir", certs, "--cert-name", who)
		_, errOut, code := runClientCLI(t, nil, args...)
		return errOut, code
	}
	for _, args := range [][]string{
		{"--operation", "all", "--topic", "pay"},
		{"--operation", "describe", "--cluster"},
	} {
		if errOut, code := as("admin", append([]string{"acl", "add", "--principal", "billing"}, args...)...); code != 0 {
			t.Fatalf("acl add %v: exit %d, stderr %q", args, code, errOut)
		}
	}
	createTopic(t, srcC, client.TopicSpec{Name: "pay", Partitions: 2, ReplicationFactor: 1, MinISR: 1})
	produceRecords(t, srcC, "pay", 0, 0, 300)
	produceRecords(t, srcC, "pay", 1, 0, 200)

	mirror := func(args ...string) (string, int) {
		t.Helper()
		return as("billing", append([]string{"mirror", "--source-bootstrap", src, "--topics", "pay", "--exit-at-end"}, args...)...)
	}
	errOut, code := mirror("--sync-group-offsets", "app", "--group", "mirror-refused")
	if code != 1 || !strings.Contains(errOut, "create the offset syncs topic paymentlog-mirror.offset-syncs on the target") {
		t.Fatalf("mirror --sync-group-offsets without the right to create the syncs topic: exit %d, stderr %q", code, errOut)
	}
	if n, err := admin.PartitionCount(ctx, "pay"); err == nil {
		// The topic may be created before the refusal; nothing is copied.
		if hws := highWatermarks(t, admin, "pay"); hws[0] != 0 || hws[1] != 0 {
			t.Fatalf("the refused mirror copied records: %v (%d partitions)", hws, n)
		}
	}

	errOut, code = mirror()
	if code != 0 || strings.Count(errOut, "writing no offset syncs (groups' offsets of what this run copies cannot be translated)") != 1 {
		t.Fatalf("mirror without the right to create the syncs topic: exit %d, stderr %q", code, errOut)
	}
	src0, dst0 := readPartitions(t, srcC, "pay"), readPartitions(t, admin, "pay")
	for p := range src0 {
		checkCopies(t, "pay", p, src0[p], dst0[p])
	}
	if _, err := admin.PartitionCount(ctx, defaultOffsetSyncsTopic); client.ErrorCode(err) == 0 {
		t.Fatalf("the offset syncs topic exists on the target: %v", err)
	}
}
