package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"paymentlog/client"
)

// translate runs `paymentlog mirror translate-offsets --execute` from e.src
// to e.dst.
func (e *mirrorEnv) translate(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return runClientCLI(t, nil, append([]string{"mirror", "translate-offsets", "--execute", "--source-bootstrap", e.src, "--bootstrap", e.dst}, args...)...)
}

// A translation below the target partition's log start (retention, or
// delete-records, removed the records there) commits the log start, by
// translate-offsets and by the running mirror's --sync-group-offsets: not
// an offset the consumer would reset from by its auto.offset.reset.
func TestMirrorTranslateClampsToLogStart(t *testing.T) {
	e := startMirrorEnv(t)
	createTopicN(t, e, "pay", 1)
	produceRecords(t, e.srcC, "pay", 0, 0, 3000)
	commitGroup(t, e.srcC, "app", "pay", map[int32]int64{0: 100})
	commitGroup(t, e.srcC, "app2", "pay", map[int32]int64{0: 100})
	if errOut, code := e.mirror(t, "--topics", "pay", "--exit-at-end"); code != 0 {
		t.Fatalf("mirror: exit %d, stderr %q", code, errOut)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := e.dstC.Admin().DeleteRecords(ctx, "pay", map[int32]int64{0: 1500}); err != nil {
		t.Fatal(err)
	}
	starts, err := e.dstC.Admin().ListOffsets(ctx, "pay", client.SeekBeginning)
	if err != nil || starts[0] != 1500 {
		t.Fatalf("target log start %v, %v; want 1500", starts, err)
	}

	out, errOut, code := e.translate(t, "app")
	if code != 0 || !strings.Contains(errOut, "pay/0: source offset 100 translates to 0, below the target's log start 1500 (retention deleted the records there): committing 1500") ||
		!strings.Contains(out, "pay    0          100     -       1500") {
		t.Fatalf("translate-offsets: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if got := groupOffsets(t, e.dstC, "app", "pay"); got[0] != 1500 {
		t.Fatalf("translate-offsets committed %v; want the log start 1500", got)
	}

	errOut, code = e.mirror(t, "--topics", "pay", "--exit-at-end", "--sync-group-offsets", "app2", "--commit-interval", "100ms")
	if code != 0 {
		t.Fatalf("mirror --sync-group-offsets: exit %d, stderr %q", code, errOut)
	}
	if got := groupOffsets(t, e.dstC, "app2", "pay"); got[0] != 1500 {
		t.Fatalf("mirror --sync-group-offsets committed %v; want the log start 1500", got)
	}
}

// After the target topic is deleted and created again (here by the
// mirror, under another group of its own, copying everything again into
// it), the offset syncs of the deleted incarnation translate nothing:
// they said source offset S was at target S+1000 (the old topic had 1000
// records of its own first), which in the new one would skip 1000
// records; nor does a sync of an earlier build, which names no
// incarnation. The running mirror and translate-offsets translate by the
// new incarnation's syncs.
func TestMirrorIgnoresSyncsOfADeletedTargetTopic(t *testing.T) {
	e := startMirrorEnv(t)
	createTopicN(t, e, "pay", 1)
	createTopic(t, e.dstC, client.TopicSpec{Name: "pay", Partitions: 1, ReplicationFactor: 1, MinISR: 1})
	produceRecords(t, e.dstC, "pay", 0, 0, 1000)
	produceRecords(t, e.srcC, "pay", 0, 0, 2000)
	if errOut, code := e.mirror(t, "--topics", "pay", "--exit-at-end"); code != 0 {
		t.Fatalf("mirror: exit %d, stderr %q", code, errOut)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.dstC.Admin().DeleteTopic(ctx, "pay"); err != nil {
		t.Fatal(err)
	}
	commitGroup(t, e.srcC, "app", "pay", map[int32]int64{0: 1500})
	commitGroup(t, e.srcC, "app2", "pay", map[int32]int64{0: 1500})
	// An earlier build's sync, naming no incarnation: ignored (it would
	// translate 1500 past everything).
	legacy := offsetSync{tp: mirrorTP("pay", 0), source: 1500, target: 3500}
	prod, err := e.dstC.NewProducer(client.ProducerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prod.ProduceSync(ctx, &client.Record{Topic: defaultOffsetSyncsTopic, Partition: 0, PartitionSet: true, Key: legacy.key(), Value: legacy.value()}); err != nil {
		t.Fatal(err)
	}
	if err := prod.Close(ctx); err != nil {
		t.Fatal(err)
	}
	errOut, code := e.mirror(t, "--topics", "pay", "--exit-at-end", "--group", "mirror-2", "--sync-group-offsets", "app", "--commit-interval", "100ms")
	if code != 0 || !strings.Contains(errOut, "created topic pay on the target") {
		t.Fatalf("mirror into the recreated topic: exit %d, stderr %q", code, errOut)
	}
	checkTranslated(t, e, "app", "pay", map[int32]int64{0: 1500}, 2000)
	if out, errOut, code := e.translate(t, "app2", "--header-scan=false"); code != 0 ||
		!strings.Contains(errOut, "1 offset syncs of paymentlog-mirror.offset-syncs name no target topic ID (written by an earlier build; the topic may have been recreated since): ignored") {
		t.Fatalf("translate-offsets: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	checkTranslated(t, e, "app2", "pay", map[int32]int64{0: 1500}, 2000)
}

// A partition mirrored without offset syncs (--offset-syncs-topic ”)
// is translated by translate-offsets' header scan: with records of the
// target's own first and a crash's repeats, a consumer of the target
// group reads every record the source group had not consumed; a caught-up
// group lands at the target's end, one at 0 at the first copy. With
// --header-scan=false, the missing syncs topic is an error.
func TestMirrorTranslateByHeaders(t *testing.T) {
	e := startMirrorEnv(t)
	const parts, n = 2, 2500
	createShiftedPay(t, e, parts, n)
	commitGroup(t, e.srcC, "app", "pay", map[int32]int64{0: 123, 1: 1650})
	commitGroup(t, e.srcC, "caught-up", "pay", map[int32]int64{0: n, 1: n})
	commitGroup(t, e.srcC, "first", "pay", map[int32]int64{0: 0, 1: 0})
	commitGroup(t, e.srcC, "held", "pay", map[int32]int64{0: 100, 1: 100})

	// A crash mid-stream, committing before every poll, then a rerun:
	// records after the crash's last commit are mirrored twice.
	var errb lockedBuffer
	opts := e.options("pay")
	opts.commitInterval = time.Nanosecond
	opts.hooks.afterForward = func(forwarded int) bool { return forwarded == 3000 }
	if err := runMirror(context.Background(), opts, &errb); err != nil {
		t.Fatalf("crashed mirror: %v; stderr %q", err, errb.String())
	}
	if errOut, code := e.mirror(t, "--topics", "pay", "--exit-at-end", "--offset-syncs-topic", ""); code != 0 {
		t.Fatalf("mirror: exit %d, stderr %q", code, errOut)
	}
	if dst := readPartitions(t, e.dstC, "pay"); len(dst[0])+len(dst[1]) <= 2*n+37+5 {
		t.Fatalf("no record mirrored twice: %d and %d records on the target", len(dst[0]), len(dst[1]))
	}

	out, errOut, code := e.translate(t, "held", "--header-scan=false")
	if code != 1 || !strings.Contains(errOut, "offset syncs topic paymentlog-mirror.offset-syncs on the target: UnknownTopicOrPartition") {
		t.Fatalf("translate-offsets --header-scan=false: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if got := groupOffsets(t, e.dstC, "held", "pay"); len(got) != 0 {
		t.Fatalf("translate-offsets --header-scan=false committed %v", got)
	}

	out, errOut, code = e.translate(t, "app")
	if code != 0 || !strings.Contains(errOut, "no offset syncs topic paymentlog-mirror.offset-syncs on the target") ||
		!strings.Contains(errOut, "pay/1: no offset sync at or below source offset 1650: translated to ") || strings.Count(out, "\n") != 3 {
		t.Fatalf("translate-offsets: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	t.Logf("translate-offsets: stderr %q", errOut)
	overlap := checkTranslated(t, e, "app", "pay", map[int32]int64{0: 123, 1: 1650}, n)
	t.Logf("app: %d records read again", overlap)

	if _, errOut, code := e.translate(t, "caught-up"); code != 0 {
		t.Fatalf("translate-offsets caught-up: exit %d, stderr %q", code, errOut)
	}
	if got, want := groupOffsets(t, e.dstC, "caught-up", "pay"), highWatermarks(t, e.dstC, "pay"); got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("caught-up group translated to %v; want the target's ends %v", got, want)
	}
	if _, errOut, code := e.translate(t, "first"); code != 0 {
		t.Fatalf("translate-offsets first: exit %d, stderr %q", code, errOut)
	}
	if got := groupOffsets(t, e.dstC, "first", "pay"); got[0] != 37 || got[1] != 5 {
		t.Fatalf("group at source offset 0 translated to %v; want the first copies, 37 and 5", got)
	}
}
