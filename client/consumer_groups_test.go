package client

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"paymentlog/client/clienttest"
	"paymentlog/quic"
	"paymentlog/wire"
)

// commitLog records the OffsetCommit requests the fake cluster receives.
type commitLog struct {
	mu   sync.Mutex
	reqs [][]wire.GroupOffset
}

func recordCommits(fc *clienttest.Cluster) *commitLog {
	l := &commitLog{}
	fc.SetIntercept(func(_ string, t quic.FrameType, req any) clienttest.Action {
		if t == wire.TypeOffsetCommit {
			l.mu.Lock()
			l.reqs = append(l.reqs, slices.Clone(req.(*wire.OffsetCommitRequest).Offsets))
			l.mu.Unlock()
		}
		return clienttest.Action{}
	})
	return l
}

func (l *commitLog) all() [][]wire.GroupOffset {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.reqs)
}

// A consumer that commits its positions and one that resumes from them
// read every record once: the second starts exactly after the first's last
// record, partitions the group has no offset for start at the fallback,
// and only partitions whose position moved are committed (nothing moved:
// no request).
func TestConsumerResumesAtCommittedPositions(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 3)
	commits := recordCommits(fc)
	c := mustFakeClient(t, fc)
	ctx := testCtx(t)
	produceValues(t, c, "t", 0, "a", "b", "c")
	produceValues(t, c, "t", 1, "x", "y")
	produceValues(t, c, "t", 2, "old")
	tps := []TopicPartition{{"t", 0}, {"t", 1}}

	cs := c.NewConsumer(ConsumerConfig{MaxWait: 20 * time.Millisecond})
	defer cs.Close()
	missing, err := cs.SeekCommitted(ctx, "g", tps, SeekBeginning)
	if err != nil || len(missing) != 2 {
		t.Fatalf("SeekCommitted of a new group: missing %v, %v; want both partitions", missing, err)
	}
	if got := pollN(t, cs, 5); len(got) != 5 {
		t.Fatalf("read %v", values(got))
	}
	if err := cs.CommitPositions(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	if err := cs.CommitPositions(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	if n := len(commits.all()); n != 1 {
		t.Fatalf("%d commit requests; want 1 (the second call had nothing that moved)", n)
	}
	offs := fc.GroupOffsets("g")
	if len(offs) != 2 || offs[0].Offset != 3 || offs[1].Offset != 2 || offs[0].LeaderEpoch != 0 || offs[1].LeaderEpoch != 0 {
		t.Fatalf("committed %+v; want t/0 at 3 and t/1 at 2, leader epoch 0", offs)
	}
	cs.Close()

	produceValues(t, c, "t", 0, "d", "e")
	produceValues(t, c, "t", 2, "new")
	cs2 := c.NewConsumer(ConsumerConfig{MaxWait: 20 * time.Millisecond})
	defer cs2.Close()
	missing, err = cs2.SeekCommitted(ctx, "g", append(tps, TopicPartition{"t", 2}), SeekEnd)
	if err != nil || len(missing) != 1 || missing[0] != (TopicPartition{"t", 2}) {
		t.Fatalf("SeekCommitted: missing %v, %v; want t/2", missing, err)
	}
	if err := cs2.CommitPositions(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	if n := len(commits.all()); n != 1 {
		t.Fatalf("CommitPositions right after SeekCommitted sent a commit (%d requests); t/2's position is not resolved yet and the others did not move", n)
	}
	// The first Poll resolves t/2's SeekEnd (at 2, after "new") before it
	// fetches: "newer" is the only record of t/2 to read.
	got := pollN(t, cs2, 2)
	produceValues(t, c, "t", 2, "newer")
	got = append(got, pollN(t, cs2, 1)...)
	var read []string
	for _, m := range got {
		read = append(read, fmt.Sprintf("%d/%d:%s", m.Partition, m.Offset, m.Value))
	}
	if !slices.Equal(read, []string{"0/3:d", "0/4:e", "2/2:newer"}) {
		t.Fatalf("resumed with %v; want t/0 from offset 3 (d e), nothing of t/1, t/2 from its end (newer)", read)
	}
	if err := cs2.CommitPositions(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	last := commits.all()[len(commits.all())-1]
	var parts []int32
	for _, o := range last {
		parts = append(parts, o.Partition)
	}
	if !slices.Equal(parts, []int32{0, 2}) {
		t.Fatalf("committed partitions %v; want 0 and 2 (t/1 did not move)", parts)
	}
	if offs := fc.GroupOffsets("g"); offs[0].Offset != 5 || offs[1].Offset != 2 {
		t.Fatalf("committed %+v", offs)
	}
}

// CommitOffsets commits what the application processed, less than Poll
// returned: the next consumer starts at the first record not processed, and
// the leader epoch sent is that of the last record processed.
func TestConsumerCommitOffsetsOfProcessedRecords(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 1)
	c := mustFakeClient(t, fc)
	ctx := testCtx(t)
	tp := TopicPartition{"t", 0}
	produceValues(t, c, "t", 0, "a", "b")
	old, _ := fc.Leader("t", 0)
	fc.SetLeader("t", 0, old%3+1) // epoch 1
	produceValues(t, c, "t", 0, "c", "d", "e")

	cs := c.NewConsumer(ConsumerConfig{MaxWait: 20 * time.Millisecond})
	defer cs.Close()
	if _, err := cs.SeekCommitted(ctx, "g", []TopicPartition{tp}, SeekBeginning); err != nil {
		t.Fatal(err)
	}
	if got := pollN(t, cs, 5); len(got) != 5 {
		t.Fatalf("read %v", values(got))
	}
	if err := cs.CommitOffsets(ctx, "g", map[TopicPartition]int64{tp: 2}); err != nil { // a and b processed
		t.Fatal(err)
	}
	if offs := fc.GroupOffsets("g"); len(offs) != 1 || offs[0].Offset != 2 || offs[0].LeaderEpoch != 0 {
		t.Fatalf("committed %+v; want offset 2 with b's leader epoch 0", offs)
	}
	if err := cs.CommitOffsets(ctx, "g", map[TopicPartition]int64{tp: 4}); err != nil {
		t.Fatal(err)
	}
	if offs := fc.GroupOffsets("g"); offs[0].Offset != 4 || offs[0].LeaderEpoch != 1 {
		t.Fatalf("committed %+v; want offset 4 with d's leader epoch 1", offs)
	}
	if err := cs.CommitOffsets(ctx, "g", map[TopicPartition]int64{{"t", 7}: 1}); err == nil {
		t.Fatal("commit of a partition not assigned succeeded")
	}
	cs.Close()

	cs2 := c.NewConsumer(ConsumerConfig{MaxWait: 20 * time.Millisecond})
	defer cs2.Close()
	if _, err := cs2.SeekCommitted(ctx, "g", []TopicPartition{tp}, SeekBeginning); err != nil {
		t.Fatal(err)
	}
	if got := pollN(t, cs2, 1); got[0].Offset != 4 || string(got[0].Value) != "e" {
		t.Fatalf("resumed at %d %q; want e at 4", got[0].Offset, got[0].Value)
	}
}

// A group that resumes after its partition's log was truncated below the
// committed offset (an unclean election while it was away) is told so, from
// the committed leader epoch, instead of reading the new leader's records
// as if they followed the ones it processed.
func TestConsumerSeekCommittedDetectsTruncation(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 1)
	c := mustFakeClient(t, fc)
	ctx := testCtx(t)
	tp := TopicPartition{"t", 0}
	produceValues(t, c, "t", 0, "a")
	produceValues(t, c, "t", 0, "b", "c")
	cs := c.NewConsumer(ConsumerConfig{MaxWait: 20 * time.Millisecond})
	defer cs.Close()
	if _, err := cs.SeekCommitted(ctx, "g", []TopicPartition{tp}, SeekBeginning); err != nil {
		t.Fatal(err)
	}
	pollN(t, cs, 3)
	if err := cs.CommitPositions(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	cs.Close()

	fc.TruncateLog("t", 0, 1) // keeps a
	old, _ := fc.Leader("t", 0)
	fc.SetLeader("t", 0, old%3+1)
	produceValues(t, c, "t", 0, "x", "y", "z")

	cs2 := c.NewConsumer(ConsumerConfig{MaxWait: 20 * time.Millisecond, RetryBackoff: 5 * time.Millisecond})
	defer cs2.Close()
	if _, err := cs2.SeekCommitted(ctx, "g", []TopicPartition{tp}, SeekBeginning); err != nil {
		t.Fatal(err)
	}
	msgs, err := pollUntil(t, cs2)
	var lt *LogTruncatedError
	if len(msgs) > 0 || !errors.As(err, &lt) || lt.DivergingEndOffset != 1 || lt.Position != 3 {
		t.Fatalf("poll after the truncation: %v, %v; want a *LogTruncatedError parting at 1 (position 3)", values(msgs), err)
	}
}
