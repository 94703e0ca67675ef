package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/segment"
)

// failback runs `paymentlog mirror failback-offsets` for the flow from
// e.src to e.dst (its syncs on e.dst).
func (e *mirrorEnv) failback(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return runClientCLI(t, nil, append([]string{"mirror", "failback-offsets", "--source-bootstrap", e.src, "--bootstrap", e.dst}, args...)...)
}

// failbackSetup mirrors payments (2 partitions of n records) from e.src
// to its copy on e.dst (policy: the mirror's policy flags), the copy
// holding records of its own first and, with crash, records a crashed
// run mirrored twice; group app has consumed the source up to at, and
// fails over by translate-offsets.
func failbackSetup(t *testing.T, e *mirrorEnv, policy []string, copy string, n int, at map[int32]int64, crash bool) {
	t.Helper()
	createTopicN(t, e, "payments", 2)
	createTopic(t, e.dstC, client.TopicSpec{Name: copy, Partitions: 2, ReplicationFactor: 1, MinISR: 1})
	produceRecords(t, e.dstC, copy, 0, 0, 37) // the copy's own records: offsets shifted
	produceRecords(t, e.dstC, copy, 1, 0, 5)
	for p := range int32(2) {
		produceRecords(t, e.srcC, "payments", p, 0, n)
	}
	commitGroup(t, e.srcC, "app", "payments", at)
	if crash {
		var errb lockedBuffer
		opts := e.options("payments")
		opts.offsetSyncsTopic, opts.commitInterval = defaultOffsetSyncsTopic, time.Nanosecond
		opts.hooks.afterForward = func(forwarded int) bool { return forwarded == n+n/3 }
		if err := runMirror(context.Background(), opts, &errb); err != nil {
			t.Fatalf("crashed mirror: %v; stderr %q", err, errb.String())
		}
	}
	if errOut, code := e.mirror(t, append(policy, "--topics", "payments", "--exit-at-end", "--commit-interval", "100ms")...); code != 0 {
		t.Fatalf("mirror: exit %d, stderr %q", code, errOut)
	}
	if out, errOut, code := e.translate(t, append(policy, "app")...); code != 0 {
		t.Fatalf("translate-offsets (the fail-over): exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// checkFailedBack checks group app's offsets of payments on the source
// against what it consumed: the source up to source[p], then the copy up
// to copyAt[p]. A consumer of the source from the group's offset misses
// no record the group had not consumed, and reads again only records it
// consumed that the copy holds again at or after the group's offset. (A
// crashed mirror run copied source offsets up to X, the next one resumed
// from its last commit C < X: a group that consumed the first copies of C
// to X and stopped at the second copy of y, C <= y < X, is failed back by
// the greatest header below its offset, y-1, to y, and reads y to X again,
// each of which has a second copy past its offset. From the sync below its
// offset alone, without the headers, it would read again up to a sync
// interval more.) A group at the copy's end lands exactly at the source's
// end. It returns the records it would read again.
func checkFailedBack(t *testing.T, e *mirrorEnv, copy string, source, copyAt map[int32]int64, n int64) int64 {
	t.Helper()
	got := groupOffsets(t, e.srcC, "app", "payments")
	all := readPartitions(t, e.dstC, copy)
	var again int64
	for p, at := range copyAt {
		consumed := map[int64]bool{}
		for o := range source[p] {
			consumed[o] = true
		}
		ahead := map[int64]bool{} // source offsets with a copy at or after at
		for _, m := range all[p] {
			if !hasHeader(m.Headers, mirrorHeader) {
				continue
			}
			s := sourceOffsets(t, "payments", p, []client.Message{m})[0]
			if m.Offset < at {
				consumed[s] = true
			} else {
				ahead[s] = true
			}
		}
		var repeated int64 // consumed, and copied again after at
		for s := range ahead {
			if consumed[s] {
				repeated++
			}
		}
		stop := int64(0) // the first source record the group has not consumed
		for stop < n && consumed[stop] {
			stop++
		}
		f, ok := got[p]
		switch {
		case !ok:
			t.Fatalf("app: no offset of payments/%d on the source after the fail-back (copy offset %d)", p, at)
		case f > stop:
			t.Fatalf("app: payments/%d failed back from copy offset %d to %d, past source offset %d, which it never consumed", p, at, f, stop)
		case stop-f > repeated:
			t.Fatalf("app: payments/%d failed back from copy offset %d to %d: %d records read again, more than the %d consumed that the copy holds again after it", p, at, f, stop-f, repeated)
		case at == highWatermarks(t, e.dstC, copy)[p] && f != n:
			t.Fatalf("app: payments/%d at the copy's end %d failed back to %d; want the source's end %d", p, at, f, n)
		}
		again += stop - f
	}
	return again
}

// The way back with the prefix policy: app consumes payments on eu1,
// fails over to eu1.payments on us1 (translate-offsets), consumes further
// there (to the copy's end on partition 0, between two syncs on 1), and
// failback-offsets puts it back on eu1's payments where it stopped (at
// the end exactly; on 1 at most a sync interval before). Without
// --execute nothing is committed, --export prints the offsets, a member
// of app on eu1 has it refused; once consumers moved it further on eu1
// it is not moved back, unless --rewind.
func TestMirrorFailbackPrefix(t *testing.T) {
	e := startMirrorEnv(t)
	const n = 2500
	policy := []string{"--replication-policy", "prefix", "--source-alias", "eu1"}
	onSource := map[int32]int64{0: 700, 1: 1234}
	failbackSetup(t, e, policy, "eu1.payments", n, onSource, false)
	copyAt := groupOffsets(t, e.dstC, "app", "eu1.payments")
	copyAt[0] = highWatermarks(t, e.dstC, "eu1.payments")[0]
	copyAt[1] += 777
	commitGroup(t, e.dstC, "app", "eu1.payments", copyAt) // consumed on us1
	createTopic(t, e.dstC, client.TopicSpec{Name: "orders", Partitions: 1, ReplicationFactor: 1, MinISR: 1})
	commitGroup(t, e.dstC, "app", "orders", map[int32]int64{0: 0}) // us1's own topic

	out, errOut, code := e.failback(t, append(policy, "app")...)
	if code != 0 || !strings.Contains(errOut, "dry run: nothing committed; add --execute to commit these offsets") ||
		!strings.Contains(errOut, "left alone: the group's offsets of orders on the target, not copies from eu1") ||
		!strings.HasPrefix(out, "TOPIC     PARTITION  COPY  BEFORE  OFFSET\npayments  0          ") || strings.Count(out, "\n") != 3 {
		t.Fatalf("failback-offsets (dry run): exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if got := groupOffsets(t, e.srcC, "app", "payments"); got[0] != 700 || got[1] != 1234 {
		t.Fatalf("the dry run committed %v", got)
	}
	out, errOut, code = e.failback(t, append(policy, "app", "--dry-run", "--export")...)
	if code != 0 || !strings.HasPrefix(out, "payments,0,2500\npayments,1,") || errOut != "left alone: the group's offsets of orders on the target, not copies from eu1\ndry run: nothing committed\n" {
		t.Fatalf("failback-offsets --dry-run --export: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	member, err := e.srcC.NewGroupConsumer(ctx, client.GroupConsumerConfig{Group: "app", Topics: []string{"payments"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, errOut, code = e.failback(t, append(policy, "app", "--execute")...); code != 1 ||
		!strings.HasSuffix(errOut, "\n") || !strings.Contains(lastLine(errOut), "fail back offsets of group app: refused: the group has members") {
		t.Fatalf("failback-offsets with a member on the source: exit %d, stderr %q", code, errOut)
	}
	if err := member.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := groupOffsets(t, e.srcC, "app", "payments"); got[0] != 700 || got[1] != 1234 {
		t.Fatalf("the refused fail-back committed %v", got)
	}

	if out, errOut, code = e.failback(t, append(policy, "app", "--execute")...); code != 0 {
		t.Fatalf("failback-offsets --execute: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// Exactly: the group failed over onto a sync, and the headers of the
	// copy's records below its offset say where it stopped.
	again := checkFailedBack(t, e, "eu1.payments", onSource, copyAt, n) // a mirror that did not crash: none repeated
	t.Logf("failed back: %v; %d records to read again", groupOffsets(t, e.srcC, "app", "payments"), again)

	// Consumers read eu1 further, then the fail-back runs again (late):
	// not moved back, unless --rewind.
	back := groupOffsets(t, e.srcC, "app", "payments")
	commitGroup(t, e.srcC, "app", "payments", map[int32]int64{1: back[1] + 100})
	out, errOut, code = e.failback(t, append(policy, "app", "--execute")...)
	if code != 0 || !strings.Contains(errOut, "payments/1 (from eu1.payments/1 on the target): the group is at ") ||
		!strings.Contains(errOut, "not moved back (--rewind moves it)") || !strings.Contains(errOut, "nothing to commit") {
		t.Fatalf("failback-offsets after consumers moved on: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if got := groupOffsets(t, e.srcC, "app", "payments"); got[1] != back[1]+100 {
		t.Fatalf("moved back to %v", got)
	}
	if out, errOut, code = e.failback(t, append(policy, "app", "--execute", "--rewind")...); code != 0 {
		t.Fatalf("failback-offsets --rewind: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if got := groupOffsets(t, e.srcC, "app", "payments"); got[1] != back[1] {
		t.Fatalf("--rewind left %v; want %d", got, back[1])
	}
}

// The way back with the identity policy, the copy holding records of its
// own and records a crashed mirror run copied twice: app fails back from
// payments on us1 to payments on eu1 where it stopped. Then eu1 comes
// back without a tail the copy has: a group at the copy's end fails back
// to eu1's log end, said on stderr.
func TestMirrorFailbackIdentity(t *testing.T) {
	e := startMirrorEnv(t)
	const n = 2500
	onSource := map[int32]int64{0: 100, 1: 2400}
	failbackSetup(t, e, nil, "payments", n, onSource, true)
	copyAt := groupOffsets(t, e.dstC, "app", "payments")
	ends := highWatermarks(t, e.dstC, "payments")
	copyAt[0] += 1500
	copyAt[1] = ends[1]
	commitGroup(t, e.dstC, "app", "payments", copyAt)
	if out, errOut, code := e.failback(t, "app", "--execute"); code != 0 {
		t.Fatalf("failback-offsets --execute: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// The crashed run's copies, consumed, are not all below the offset
	// the syncs and the headers say: some are read again, each copied
	// again after the group's offset.
	again := checkFailedBack(t, e, "payments", onSource, copyAt, n)
	t.Logf("failed back: %v; %d records to read again", groupOffsets(t, e.srcC, "app", "payments"), again)

	// A topic mirrored without offset syncs: failed back by the mirror
	// headers of the copy's records below the group's offset.
	createTopicN(t, e, "refunds", 1)
	produceRecords(t, e.srcC, "refunds", 0, 0, 600)
	if errOut, code := e.mirror(t, "--topics", "refunds", "--exit-at-end", "--offset-syncs-topic", ""); code != 0 {
		t.Fatalf("mirror refunds: exit %d, stderr %q", code, errOut)
	}
	commitGroup(t, e.dstC, "app", "refunds", map[int32]int64{0: 300})
	out, errOut, code := e.failback(t, "app", "--execute")
	if code != 0 || !strings.Contains(errOut, "refunds/0: no offset sync at or below copy offset 300: failed back to 300 by the mirror headers of the copy's records below it") {
		t.Fatalf("failback-offsets of a copy without syncs: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if got := groupOffsets(t, e.srcC, "app", "refunds"); got[0] != 300 {
		t.Fatalf("refunds failed back to %v; want 300", got)
	}

	// eu1 failed with a tail the mirror had copied and no follower had:
	// it comes back without it. (Made here by copies, with their headers,
	// of source offsets 2500 to 2599 that eu1 never had, and a sync past
	// them on partition 0.)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	prod, err := e.dstC.NewProducer(client.ProducerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(2) {
		for o := n; o < n+100; o++ {
			rec := &client.Record{Topic: "payments", Partition: p, PartitionSet: true, Value: []byte("lost"),
				Headers: []segment.RecordHeader{{Key: mirrorHeader, Value: sourcePosition("payments", p, int64(o))}}}
			if _, err := prod.ProduceSync(ctx, rec); err != nil {
				t.Fatal(err)
			}
		}
	}
	ends = highWatermarks(t, e.dstC, "payments")
	lost := offsetSync{tp: mirrorTP("payments", 0), source: n + 100, target: ends[0], topicID: topicID(t, e.dstC, "payments")}
	if _, err := prod.ProduceSync(ctx, &client.Record{Topic: defaultOffsetSyncsTopic, Partition: 0, PartitionSet: true, Key: lost.key(), Value: lost.value()}); err != nil {
		t.Fatal(err)
	}
	if err := prod.Close(ctx); err != nil {
		t.Fatal(err)
	}
	commitGroup(t, e.dstC, "app", "payments", ends) // it consumed the copy to its end
	out, errOut, code = e.failback(t, "app", "--execute")
	if code != 0 || !strings.Contains(errOut, "payments/0: copy offset "+itoa(ends[0])+" fails back to source offset 2600, past the source's log end 2500") ||
		!strings.Contains(errOut, "payments/1: copy offset "+itoa(ends[1])+" fails back to source offset 2600, past the source's log end 2500") {
		t.Fatalf("failback-offsets onto a source that lost its tail: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if got := groupOffsets(t, e.srcC, "app", "payments"); got[0] != n || got[1] != n {
		t.Fatalf("failed back onto a source that lost its tail: %v; want its log end %d", got, n)
	}
}
