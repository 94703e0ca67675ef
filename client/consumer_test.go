package client

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"paymentlog/client/clienttest"
	"paymentlog/quic"
	"paymentlog/segment"
	"paymentlog/wire"
)

// pollN polls until n messages arrived.
func pollN(tb testing.TB, cs *Consumer, n int) []Message {
	tb.Helper()
	ctx := testCtx(tb)
	var out []Message
	for len(out) < n {
		m, err := cs.Poll(ctx)
		if err != nil {
			tb.Fatalf("poll after %d of %d: %v", len(out), n, err)
		}
		out = append(out, m...)
	}
	return out
}

func produceValues(tb testing.TB, c *Client, topic string, part int32, vals ...string) {
	tb.Helper()
	p, err := c.NewProducer(ProducerConfig{Linger: time.Hour})
	if err != nil {
		tb.Fatal(err)
	}
	ctx := testCtx(tb)
	for _, v := range vals {
		if err := p.Produce(ctx, &Record{Topic: topic, Partition: part, PartitionSet: true, Value: []byte(v)}, nil); err != nil {
			tb.Fatal(err)
		}
	}
	if err := p.Close(ctx); err != nil {
		tb.Fatal(err)
	}
}

func TestConsumeFromOffsetInsideBatch(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 1)
	c := mustFakeClient(t, fc)
	produceValues(t, c, "t", 0, "a", "b", "c", "d", "e") // one batch
	cs := c.NewConsumer(ConsumerConfig{MaxWait: 50 * time.Millisecond})
	defer cs.Close()
	cs.Assign([]TopicPartition{{"t", 0}}, 2)
	msgs := pollN(t, cs, 3)
	if len(msgs) != 3 || msgs[0].Offset != 2 || string(msgs[0].Value) != "c" || string(msgs[2].Value) != "e" {
		t.Fatalf("got %+v", msgs)
	}
	if pos, _ := cs.Position(TopicPartition{"t", 0}); pos != 5 {
		t.Fatalf("position %d", pos)
	}
}

func TestConsumeAllPartitionsThenLongPoll(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 3)
	c := mustFakeClient(t, fc)
	for p := int32(0); p < 3; p++ {
		produceValues(t, c, "t", p, fmt.Sprintf("p%d-0", p), fmt.Sprintf("p%d-1", p))
	}
	cs := c.NewConsumer(ConsumerConfig{MaxWait: 20 * time.Second})
	defer cs.Close()
	if _, err := cs.AssignTopic(testCtx(t), "t", SeekBeginning); err != nil {
		t.Fatal(err)
	}
	msgs := pollN(t, cs, 6)
	if len(msgs) != 6 {
		t.Fatalf("got %d", len(msgs))
	}
	// A long poll is answered as soon as a record arrives, long before
	// MaxWait (the margin lets a loaded test machine stall for seconds).
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(50 * time.Millisecond)
		p, _ := c.NewProducer(ProducerConfig{})
		if _, err := p.ProduceSync(context.Background(), &Record{Topic: "t", Partition: 1, PartitionSet: true, Value: []byte("late")}); err != nil {
			t.Error(err)
		}
		p.Close(context.Background())
	}()
	defer func() { <-done }()
	start := time.Now()
	msgs = pollN(t, cs, 1)
	if string(msgs[0].Value) != "late" || time.Since(start) > 5*time.Second {
		t.Fatalf("got %q after %v", msgs[0].Value, time.Since(start))
	}
}

func TestConsumeSeekEnd(t *testing.T) {
	fc := clienttest.New(1)
	fc.CreateTopic("t", 1)
	c := mustFakeClient(t, fc)
	produceValues(t, c, "t", 0, "old1", "old2")
	cs := c.NewConsumer(ConsumerConfig{MaxWait: 30 * time.Millisecond})
	defer cs.Close()
	cs.Assign([]TopicPartition{{"t", 0}}, SeekEnd)
	if m, err := cs.Poll(testCtx(t)); err != nil || len(m) != 0 {
		t.Fatalf("poll at end: %v %v", m, err)
	}
	produceValues(t, c, "t", 0, "new")
	msgs := pollN(t, cs, 1)
	if string(msgs[0].Value) != "new" || msgs[0].Offset != 2 {
		t.Fatalf("got %+v", msgs[0])
	}
}

func TestConsumeFollowsLeaderChange(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 1)
	c := mustFakeClient(t, fc)
	produceValues(t, c, "t", 0, "a")
	cs := c.NewConsumer(ConsumerConfig{MaxWait: 30 * time.Millisecond, RetryBackoff: 5 * time.Millisecond})
	defer cs.Close()
	cs.Assign([]TopicPartition{{"t", 0}}, SeekBeginning)
	pollN(t, cs, 1)
	old, _ := fc.Leader("t", 0)
	fc.SetLeader("t", 0, old%3+1)
	produceValues(t, c, "t", 0, "b")
	msgs := pollN(t, cs, 1)
	if string(msgs[0].Value) != "b" {
		t.Fatalf("got %q", msgs[0].Value)
	}
}

func TestConsumeOffsetOutOfRange(t *testing.T) {
	fc := clienttest.New(1)
	fc.CreateTopic("t", 1)
	c := mustFakeClient(t, fc)
	produceValues(t, c, "t", 0, "a")
	cs := c.NewConsumer(ConsumerConfig{MaxWait: 30 * time.Millisecond})
	defer cs.Close()
	cs.Assign([]TopicPartition{{"t", 0}}, 99)
	_, err := cs.Poll(testCtx(t))
	var oor *OffsetOutOfRangeError
	if !errors.As(err, &oor) || oor.Requested != 99 || oor.End != 1 {
		t.Fatalf("got %v", err)
	}
}

func TestAdminCreateGoesToController(t *testing.T) {
	fc := clienttest.New(3)
	fc.SetController(3)
	c := mustFakeClient(t, fc)
	a := c.Admin()
	ctx := testCtx(t)
	if _, err := a.CreateTopic(ctx, TopicSpec{Name: "x", Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.CreateTopic(ctx, TopicSpec{Name: "x", Partitions: 2}); ErrorCode(err) != wire.TopicAlreadyExists {
		t.Fatalf("second create: %v", err)
	}
	names, err := a.ListTopics(ctx)
	if err != nil || len(names) != 1 || names[0] != "x" {
		t.Fatalf("list: %v %v", names, err)
	}
	produceValues(t, c, "x", 1, "a", "b", "c")
	d, err := a.DescribeTopic(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Partitions) != 2 || d.Partitions[1].HighWatermark != 3 || d.Partitions[1].LogStartOffset != 0 || d.Partitions[0].HighWatermark != 0 {
		t.Fatalf("describe: %+v", d)
	}
	// The controller moves: NotController, refresh, retry.
	fc.SetController(1)
	if err := a.DeleteTopic(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.DescribeTopic(ctx, "x"); ErrorCode(err) != wire.UnknownTopicOrPartition {
		t.Fatalf("describe deleted: %v", err)
	}
	st, err := a.DescribeCluster(ctx)
	if err != nil || st.ControllerID != 1 || st.Alive() != 3 {
		t.Fatalf("cluster: %+v %v", st, err)
	}
}

func TestHedgedMetadataSkipsDeadNode(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 1)
	dead := fc.Addrs()[0]
	fc.SetIntercept(func(addr string, _ quic.FrameType, _ any) clienttest.Action {
		if addr == dead {
			return clienttest.Action{Kind: clienttest.Hang}
		}
		return clienttest.Action{}
	})
	c := mustFakeClient(t, fc)
	start := time.Now()
	if err := c.meta.refresh(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 2*time.Second {
		t.Fatalf("refresh took %v with one dead node", time.Since(start))
	}
}

// The leader dies while a long poll is outstanding (it never answers); once
// the metadata names a new leader the consumer must fetch there, not wait
// for the dead one's transport timeout.
func TestConsumeAbandonsFetchToDeadLeader(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 1)
	c := mustFakeClient(t, fc)
	produceValues(t, c, "t", 0, "a")
	cs := c.NewConsumer(ConsumerConfig{MaxWait: 200 * time.Millisecond, RetryBackoff: 5 * time.Millisecond})
	defer cs.Close()
	cs.Assign([]TopicPartition{{"t", 0}}, SeekBeginning)
	pollN(t, cs, 1)
	old, _ := fc.Leader("t", 0)
	dead := fc.Addrs()[old-1]
	fc.SetIntercept(func(addr string, _ quic.FrameType, _ any) clienttest.Action {
		if addr == dead {
			return clienttest.Action{Kind: clienttest.Hang}
		}
		return clienttest.Action{}
	})
	if m, err := cs.Poll(testCtx(t)); err != nil || len(m) != 0 { // leaves a fetch hanging at the dead leader
		t.Fatalf("poll: %v %v", m, err)
	}
	fc.SetLeader("t", 0, old%3+1)
	produceValues(t, c, "t", 0, "b")
	start := time.Now()
	msgs := pollN(t, cs, 1)
	if string(msgs[0].Value) != "b" || time.Since(start) > 3*time.Second {
		t.Fatalf("got %q after %v", msgs[0].Value, time.Since(start))
	}
}

// One assigned partition is offline while its SeekBeginning is still to be
// resolved: Poll must still return the other partition's records (and come
// back after about MaxWait when there are none), not retry the offline
// partition's ListOffsets until ctx ends.
func TestConsumeOfflinePartitionDoesNotStallOthers(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 2)
	c := mustFakeClient(t, fc)
	produceValues(t, c, "t", 0, "a", "b")
	fc.SetLeader("t", 1, -1)
	cs := c.NewConsumer(ConsumerConfig{MaxWait: 50 * time.Millisecond, RetryBackoff: 5 * time.Millisecond})
	defer cs.Close()
	if _, err := cs.AssignTopic(testCtx(t), "t", SeekBeginning); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(testCtx(t), 5*time.Second)
	defer cancel()
	var got []Message
	for len(got) < 2 {
		msgs, err := cs.Poll(ctx)
		if err != nil {
			t.Fatalf("poll with partition 1 offline, after %d records: %v", len(got), err)
		}
		got = append(got, msgs...)
	}
	if string(got[0].Value) != "a" || string(got[1].Value) != "b" {
		t.Fatalf("got %+v", got)
	}
	// The offline partition comes back: its position resolves and it is read.
	fc.SetLeader("t", 1, 2)
	produceValues(t, c, "t", 1, "c")
	msgs := pollN(t, cs, 1)
	if string(msgs[0].Value) != "c" || msgs[0].Partition != 1 || msgs[0].Offset != 0 {
		t.Fatalf("got %+v", msgs[0])
	}
}

// A batch whose CRC is right but whose second record is malformed (the
// leader checks only the CRC, so a faulty producer can get one into the
// log): the record before it is returned, the error is reported, and the
// position stops at the bad record instead of moving past the whole batch,
// which silently skipped the records after it.
func TestDecodeFetchedStopsAtCorruptRecord(t *testing.T) {
	bld := segment.NewBuilder(segment.BuilderOptions{})
	for _, v := range []string{"a", "b", "c"} {
		bld.Add(1, nil, []byte(v), nil)
	}
	b := append(segment.Batch(nil), bld.Build()...)
	b.SetBaseOffset(10)
	// Records start after the header: length, attributes, timestamp delta,
	// offset delta. Give record 1 offset delta 5, then fix the CRC.
	r1 := segment.HeaderSize + 1 + int(b[segment.HeaderSize]>>1)
	if b[r1+3] != 2 { // zigzag(1)
		t.Fatalf("record 1 offset delta byte is %d", b[r1+3])
	}
	b[r1+3] = 10
	const offCRC, offAttributes = 17, 21 // segment's header layout
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], crc32.MakeTable(crc32.Castagnoli)))
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	msgs, next, err := decodeFetched(TopicPartition{"t", 0}, b, 10, nil, nil)
	if !errors.Is(err, segment.ErrCorrupt) {
		t.Fatalf("err %v, want corruption", err)
	}
	if len(msgs) != 1 || string(msgs[0].Value) != "a" || next != 11 {
		t.Fatalf("%d records, next %d: want record 10 and position 11 (the bad record)", len(msgs), next)
	}
	// Asked from the bad record itself: nothing, and the position stays.
	if msgs, next, err = decodeFetched(TopicPartition{"t", 0}, b, 11, nil, nil); err == nil || len(msgs) != 0 || next != 11 {
		t.Fatalf("from 11: %d records, next %d, err %v", len(msgs), next, err)
	}
}

// compactedBatch is a batch of vals at base as the log cleaner leaves it
// when only the first keep records survive (segment.AttrCompacted): the
// same offsets, fewer records, down to none.
func compactedBatch(t *testing.T, base int64, keep int, vals ...string) segment.Batch {
	t.Helper()
	bld := segment.NewBuilder(segment.BuilderOptions{})
	for _, v := range vals {
		bld.Add(1, []byte("k"), []byte(v), nil)
	}
	b := append(segment.Batch(nil), bld.Build()...)
	end := segment.HeaderSize
	for range keep { // each record: a one-byte zigzag length, then that many bytes
		end += 1 + int(b[end]>>1)
	}
	b = b[:end]
	const offLength, offCRC, offAttributes, offRecordCount = 8, 17, 21, 57 // segment's header layout
	binary.BigEndian.PutUint32(b[offLength:], uint32(len(b)-12))
	binary.BigEndian.PutUint16(b[offAttributes:], binary.BigEndian.Uint16(b[offAttributes:])|uint16(segment.AttrCompacted))
	binary.BigEndian.PutUint32(b[offRecordCount:], uint32(keep))
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], crc32.MakeTable(crc32.Castagnoli)))
	b.SetBaseOffset(base)
	if err := b.Validate(); err != nil || !b.Compacted() {
		t.Fatalf("compacted batch: %v", err)
	}
	return b
}

// Batches the log cleaner left with fewer records than offsets, one with
// none among them: the records left are delivered in order, the position
// moves past each batch's last offset, and sizing the output
// (countRecords) goes on past the empty batch instead of stopping there.
func TestDecodeFetchedCompactedBatches(t *testing.T) {
	var buf []byte
	buf = append(buf, compactedBatch(t, 10, 1, "a", "b", "c")...) // 10 left of 10-12
	buf = append(buf, compactedBatch(t, 13, 0, "d", "e")...)      // none of 13-14
	buf = append(buf, compactedBatch(t, 15, 2, "f", "g", "h")...) // 15, 16 of 15-17
	if n := countRecords(buf); n != 3 {
		t.Fatalf("countRecords: %d, want 3", n)
	}
	msgs, next, err := decodeFetched(TopicPartition{"t", 0}, buf, 10, nil, nil)
	if err != nil || next != 18 {
		t.Fatalf("decode: next %d, err %v; want 18", next, err)
	}
	var got []string
	for _, m := range msgs {
		got = append(got, fmt.Sprint(m.Offset, "=", string(m.Value)))
	}
	if strings.Join(got, " ") != "10=a 15=f 16=g" {
		t.Fatalf("records %q", got)
	}
	if msgs, next, err := decodeFetched(TopicPartition{"t", 0}, buf, 13, nil, nil); err != nil || next != 18 || len(msgs) != 2 {
		t.Fatalf("from 13: %d records, next %d, err %v", len(msgs), next, err)
	}
}

// The last fetched epoch is the last batch's, also when the log cleaner
// emptied it: a consumer whose records all came from epoch 0 but whose
// position passed an emptied batch of epoch 2 sends epoch 2 with its next
// fetch (else the leader, finding the consumer's epoch 0 ending before
// its position, would answer that its log was truncated), and a commit at
// its position carries epoch 2. Found by the chaos run with --compact.
func TestLastFetchedEpochCountsEmptiedBatches(t *testing.T) {
	b0 := compactedBatch(t, 10, 1, "a", "b", "c") // 10 left of 10-12, epoch 0
	b1 := compactedBatch(t, 13, 0, "d", "e")      // none of 13-14, epoch 2
	b2 := compactedBatch(t, 15, 0, "f")           // none of 15, epoch 3
	b1.SetLeaderEpoch(2)                          // outside the CRC, which the leader stamps
	b2.SetLeaderEpoch(3)
	cp := &cpart{tp: TopicPartition{"t", 0}}
	buf := append(append([]byte(nil), b0...), b1...)
	msgs, next, err := decodeFetched(cp.tp, buf, 11, nil, cp.entered)
	cp.pos = next
	if err != nil || len(msgs) != 0 || next != 15 {
		t.Fatalf("from 11: %d records, next %d, err %v", len(msgs), next, err)
	}
	if cp.lastEpoch() != 2 || !slices.Equal(cp.epochs, []epochStart{{0, 11}, {2, 13}}) {
		t.Fatalf("epochs %v, last %d; want [{0 11} {2 13}], 2", cp.epochs, cp.lastEpoch())
	}
	if e := cp.epochBefore(15); e != 2 {
		t.Fatalf("epoch before 15: %d, want 2 (of the emptied batch)", e)
	}
	if e := cp.epochBefore(12); e != 0 {
		t.Fatalf("epoch before 12: %d, want 0", e)
	}
	msgs, next, err = decodeFetched(cp.tp, b2, next, msgs, cp.entered)
	cp.pos = next
	if err != nil || len(msgs) != 0 || next != 16 || cp.lastEpoch() != 3 {
		t.Fatalf("then: %d records, next %d, err %v, last epoch %d", len(msgs), next, err, cp.lastEpoch())
	}
	// A leader of epoch 3 that ended epoch 2 at 14 (its epoch 3 began
	// there): the records passed part from its log at 14.
	if d := cp.divergence(16, wire.EpochEndOffset{Epoch: 2, EndOffset: 14}); d != 14 {
		t.Fatalf("divergence %d, want 14", d)
	}
}

// Two records with headers in one batch: each message keeps its own headers
// (the batch iterator reuses its header slice from record to record).
func TestConsumeHeadersOfEveryRecordInABatch(t *testing.T) {
	fc := clienttest.New(1)
	fc.CreateTopic("t", 1)
	c := mustFakeClient(t, fc)
	p, err := c.NewProducer(ProducerConfig{Linger: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	for _, v := range []string{"x", "y", "z"} {
		hdr := []segment.RecordHeader{{Key: "h", Value: []byte(v)}}
		if err := p.Produce(ctx, &Record{Topic: "t", Value: []byte(v), Headers: hdr}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(ctx); err != nil { // one batch of three records
		t.Fatal(err)
	}
	cs := c.NewConsumer(ConsumerConfig{MaxWait: 50 * time.Millisecond})
	defer cs.Close()
	cs.Assign([]TopicPartition{{"t", 0}}, SeekBeginning)
	for _, m := range pollN(t, cs, 3) {
		if len(m.Headers) != 1 || m.Headers[0].Key != "h" || string(m.Headers[0].Value) != string(m.Value) {
			t.Errorf("record %d (%q): headers %+v", m.Offset, m.Value, m.Headers)
		}
	}
}

// A new leader whose HW has not yet caught up with its predecessor's
// (KIP-207) reports no HW in fetch answers and answers ListOffsets(latest)
// with OffsetNotAvailable. The consumer's HighWatermark must not go back
// (to -1 or below what it saw), and EndOffsets must retry until the leader
// knows its HW, not fail or answer low.
func TestConsumerEndAcrossNewLeaderWithLaggingHW(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 1)
	c := mustFakeClient(t, fc)
	produceValues(t, c, "t", 0, "a", "b", "c")
	tp := TopicPartition{"t", 0}
	cs := c.NewConsumer(ConsumerConfig{MaxWait: 50 * time.Millisecond})
	defer cs.Close()
	cs.Assign([]TopicPartition{tp}, SeekBeginning)
	pollN(t, cs, 3)
	if hw := cs.HighWatermark(tp); hw != 3 {
		t.Fatalf("high watermark %d, want 3", hw)
	}

	old, _ := fc.Leader("t", 0)
	fc.SetLeader("t", 0, old%3+1)
	fc.SetHWUnknown("t", 0, true)
	if err := cs.Seek(tp, 0); err != nil {
		t.Fatal(err)
	}
	if msgs := pollN(t, cs, 3); string(msgs[2].Value) != "c" {
		t.Fatalf("got %+v", msgs)
	}
	if hw := cs.HighWatermark(tp); hw != 3 {
		t.Fatalf("high watermark %d after the new leader's answer, want 3 (it must not go back)", hw)
	}

	ctx := testCtx(t)
	type result struct {
		ends map[TopicPartition]int64
		err  error
	}
	done := make(chan result, 1)
	before := fc.Calls(wire.TypeListOffsets)
	go func() {
		ends, err := cs.EndOffsets(ctx, []TopicPartition{tp})
		done <- result{ends, err}
	}()
	// Wait (with a deadline) until EndOffsets has been refused twice.
	deadline := time.Now().Add(10 * time.Second)
	for fc.Calls(wire.TypeListOffsets) < before+2 {
		select {
		case r := <-done:
			t.Fatalf("EndOffsets answered %v, %v while the leader's HW was unknown", r.ends, r.err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("EndOffsets did not ask again")
		}
		time.Sleep(time.Millisecond)
	}
	fc.SetHWUnknown("t", 0, false)
	select {
	case r := <-done:
		if r.err != nil || r.ends[tp] != 3 {
			t.Fatalf("EndOffsets: %v, %v; want 3", r.ends, r.err)
		}
	case <-ctx.Done():
		t.Fatal("EndOffsets did not return")
	}
}

// A CreateTopic whose first attempt created the topic but lost its answer is
// retried and refused with TopicAlreadyExists: the error still matches it,
// and says the earlier attempt may have created the topic. A plain duplicate
// create does not say so.
func TestAdminCreateRetriedAfterLostAnswer(t *testing.T) {
	fc := clienttest.New(3)
	var dropped atomic.Bool
	fc.SetIntercept(func(addr string, ty quic.FrameType, req any) clienttest.Action {
		if ty == wire.TypeCreateTopic && dropped.CompareAndSwap(false, true) {
			return clienttest.Action{Kind: clienttest.DropResponse}
		}
		return clienttest.Action{}
	})
	c := mustFakeClient(t, fc)
	a := c.Admin()
	ctx := testCtx(t)
	_, err := a.CreateTopic(ctx, TopicSpec{Name: "x", Partitions: 2})
	if ErrorCode(err) != wire.TopicAlreadyExists || !strings.Contains(err.Error(), "may have created it") {
		t.Fatalf("create retried after a lost answer: %v; want TopicAlreadyExists saying the earlier attempt may have created it", err)
	}
	if !dropped.Load() {
		t.Fatal("no answer was dropped")
	}
	_, err = a.CreateTopic(ctx, TopicSpec{Name: "x", Partitions: 2})
	if ErrorCode(err) != wire.TopicAlreadyExists || strings.Contains(err.Error(), "may have created it") {
		t.Fatalf("plain duplicate create: %v", err)
	}
}

// One fetch answer carries records for one partition and an error for
// another. Poll used to return both at once, the records' positions already
// past them: a caller doing the usual "if err != nil" dropped records it
// would never see again. Poll now returns the records alone and the error
// at the next call.
func TestPollNeverReturnsRecordsWithAnError(t *testing.T) {
	fc := clienttest.New(1)
	fc.CreateTopic("t", 2) // both partitions on node 1: one fetch for both
	c := mustFakeClient(t, fc)
	produceValues(t, c, "t", 0, "a", "b")
	cs := c.NewConsumer(ConsumerConfig{MaxWait: 30 * time.Millisecond})
	defer cs.Close()
	cs.Assign([]TopicPartition{{"t", 0}}, 0)
	cs.Assign([]TopicPartition{{"t", 1}}, 99) // out of range
	ctx := testCtx(t)
	msgs, err := cs.Poll(ctx)
	if err != nil {
		t.Fatalf("first poll: %d records with error %v; want the records alone", len(msgs), err)
	}
	if len(msgs) != 2 || string(msgs[0].Value) != "a" || string(msgs[1].Value) != "b" {
		t.Fatalf("first poll: %+v", msgs)
	}
	msgs, err = cs.Poll(ctx)
	var oor *OffsetOutOfRangeError
	if len(msgs) != 0 || !errors.As(err, &oor) || oor.Partition != 1 || oor.Requested != 99 {
		t.Fatalf("second poll: %d records, %v; want the OffsetOutOfRange of partition 1", len(msgs), err)
	}
}

// A consumer whose fetch hangs at a leader that died learns of the new
// leader from its metadata watch the moment the change is applied, not
// after the fetch is overdue (TestConsumeAbandonsFetchToDeadLeader): here
// MaxWait is an hour, so without the watch it would wait that long.
func TestConsumeWatchFindsNewLeaderOfAHungFetch(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 1)
	c := mustFakeClient(t, fc)
	produceValues(t, c, "t", 0, "a")
	cs := c.NewConsumer(ConsumerConfig{MaxWait: time.Hour, RetryBackoff: 5 * time.Millisecond})
	defer cs.Close()
	cs.Assign([]TopicPartition{{"t", 0}}, SeekBeginning)
	pollN(t, cs, 1)
	old, _ := fc.Leader("t", 0)
	dead := fc.Addrs()[old-1]
	var hung atomic.Int64
	fc.SetIntercept(func(addr string, ft quic.FrameType, _ any) clienttest.Action {
		if ft == wire.TypeFetch && addr == dead {
			hung.Add(1)
			return clienttest.Action{Kind: clienttest.Hang}
		}
		return clienttest.Action{}
	})
	type polled struct {
		msgs []Message
		err  error
	}
	got := make(chan polled, 1)
	go func() {
		var p polled
		for len(p.msgs) == 0 && p.err == nil {
			p.msgs, p.err = cs.Poll(testCtx(t))
		}
		got <- p
	}()
	deadline := time.Now().Add(10 * time.Second)
	for hung.Load() == 0 { // the consumer's fetch now hangs at the dead leader
		if time.Now().After(deadline) {
			t.Fatal("no fetch reached the dead leader")
		}
		time.Sleep(time.Millisecond)
	}
	fc.SetLeader("t", 0, old%3+1)
	produceValues(t, mustFakeClient(t, fc), "t", 0, "b") // its metadata is not the consumer's
	if p := <-got; p.err != nil || len(p.msgs) != 1 || string(p.msgs[0].Value) != "b" {
		t.Fatalf("poll: %v, %d messages", p.err, len(p.msgs))
	}
}
