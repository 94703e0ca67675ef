package client

import (
	"errors"
	"testing"
	"time"

	"paymentlog/client/clienttest"
	"paymentlog/quic"
	"paymentlog/wire"
)

// pollUntil polls until Poll returns records or an error, failing after 10 s.
func pollUntil(t *testing.T, cs *Consumer) ([]Message, error) {
	t.Helper()
	ctx := testCtx(t)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		msgs, err := cs.Poll(ctx)
		if len(msgs) > 0 || err != nil {
			return msgs, err
		}
	}
	t.Fatal("no records and no error in 10 s")
	return nil, nil
}

func values(msgs []Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, string(m.Value))
	}
	return out
}

// TestConsumePollReportsLogTruncation: the consumer read a b c (epoch 0,
// position 3); an unclean election then made a leader of epoch 1 that had
// only a and wrote x y z w. Poll must report the truncation, naming the
// partition, the position and the offset where the histories part (1),
// again on the next Poll, and must not return z w as the records after c.
// Seeking to the divergence point reads the new leader's history from
// there; a later clean leader change goes on without an error.
func TestConsumePollReportsLogTruncation(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 1)
	c := mustFakeClient(t, fc)
	produceValues(t, c, "t", 0, "a")
	produceValues(t, c, "t", 0, "b", "c")
	cs := c.NewConsumer(ConsumerConfig{MaxWait: 30 * time.Millisecond, RetryBackoff: 5 * time.Millisecond})
	defer cs.Close()
	tp := TopicPartition{"t", 0}
	cs.Assign([]TopicPartition{tp}, SeekBeginning)
	if got := values(pollN(t, cs, 3)); len(got) != 3 || got[2] != "c" {
		t.Fatalf("read %v", got)
	}

	fc.TruncateLog("t", 0, 1)
	old, _ := fc.Leader("t", 0)
	fc.SetLeader("t", 0, old%3+1)
	produceValues(t, c, "t", 0, "x", "y", "z", "w")

	for i := 0; i < 2; i++ {
		msgs, err := pollUntil(t, cs)
		if len(msgs) > 0 {
			t.Fatalf("poll %d after the truncation returned %v at offset %d as if they followed c", i, values(msgs), msgs[0].Offset)
		}
		var lt *LogTruncatedError
		if !errors.Is(err, ErrLogTruncated) || !errors.As(err, &lt) {
			t.Fatalf("poll %d: %v, want a *LogTruncatedError", i, err)
		}
		want := LogTruncatedError{TopicPartition: tp, Position: 3, LastFetchedEpoch: 0, DivergingEpoch: 0, DivergingEndOffset: 1}
		if *lt != want {
			t.Fatalf("poll %d: %+v, want %+v", i, *lt, want)
		}
		if pos, _ := cs.Position(tp); pos != 3 {
			t.Fatalf("position %d after the truncation, want 3", pos)
		}
	}

	if err := cs.Seek(tp, 1); err != nil {
		t.Fatal(err)
	}
	msgs := pollN(t, cs, 4)
	if got := values(msgs); len(got) != 4 || got[0] != "x" || got[3] != "w" || msgs[0].Offset != 1 || msgs[0].LeaderEpoch != 1 {
		t.Fatalf("after seeking to 1: %v (first at %d, epoch %d)", got, msgs[0].Offset, msgs[0].LeaderEpoch)
	}

	// A clean leader change (nothing lost) is no divergence.
	cur, _ := fc.Leader("t", 0)
	fc.SetLeader("t", 0, cur%3+1)
	produceValues(t, c, "t", 0, "v")
	if m, err := pollUntil(t, cs); err != nil || len(m) != 1 || string(m[0].Value) != "v" || m[0].Offset != 5 {
		t.Fatalf("after a clean leader change: %v %v", values(m), err)
	}
}

// TestConsumeLastFetchedEpochSent: fetches carry the epoch of the last
// record returned: -1 before any, then the epoch of the newest batch read.
func TestConsumeLastFetchedEpochSent(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 1)
	c := mustFakeClient(t, fc)
	produceValues(t, c, "t", 0, "a")
	old, _ := fc.Leader("t", 0)
	fc.SetLeader("t", 0, old%3+1)
	produceValues(t, c, "t", 0, "b")
	sent := make(chan wire.FetchPartition, 100)
	fc.SetIntercept(func(addr string, ft quic.FrameType, req any) clienttest.Action {
		if fr, ok := req.(*wire.FetchRequest); ok {
			select {
			case sent <- fr.Parts[0]:
			default:
			}
		}
		return clienttest.Action{}
	})
	cs := c.NewConsumer(ConsumerConfig{MaxWait: 30 * time.Millisecond, RetryBackoff: 5 * time.Millisecond})
	defer cs.Close()
	cs.Assign([]TopicPartition{{"t", 0}}, 0)
	pollN(t, cs, 2)
	if fp := <-sent; fp.LastFetchedEpoch != -1 || fp.Offset != 0 {
		t.Fatalf("first fetch %+v, want offset 0 and last fetched epoch -1", fp)
	}
	deadline := time.After(10 * time.Second)
	for {
		select {
		case fp := <-sent:
			if fp.Offset != 2 {
				continue
			}
			if fp.LastFetchedEpoch != 1 {
				t.Fatalf("fetch after b: %+v, want last fetched epoch 1", fp)
			}
			return
		case <-deadline:
			t.Fatal("no fetch at offset 2 in 10 s")
		default:
			if _, err := cs.Poll(testCtx(t)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestDivergencePoint: where the records returned part from the leader's
// log, given their epoch history and the leader's answer.
func TestDivergencePoint(t *testing.T) {
	cp := &cpart{pos: 15, epochs: []epochStart{{3, 0}, {5, 10}}}
	for _, tc := range []struct {
		d    wire.EpochEndOffset
		want int64
	}{
		{wire.EpochEndOffset{Epoch: 5, EndOffset: 12}, 12}, // the leader left epoch 5 at 12
		{wire.EpochEndOffset{Epoch: 3, EndOffset: 12}, 10}, // ours left epoch 3 at 10
		{wire.EpochEndOffset{Epoch: 3, EndOffset: 20}, 10}, // the leader has epoch 3 past our position
		{wire.EpochEndOffset{Epoch: 4, EndOffset: 8}, 8},
		{wire.EpochEndOffset{Epoch: 2, EndOffset: 7}, 0},  // all we returned is of later epochs
		{wire.EpochEndOffset{Epoch: -1, EndOffset: 4}, 4}, // the leader knows no epoch that old
	} {
		if got := cp.divergence(cp.pos, tc.d); got != tc.want {
			t.Errorf("%+v: %d, want %d", tc.d, got, tc.want)
		}
	}
	// A seek within the records returned keeps their epochs below it.
	cp.seekEpochs(12)
	if cp.lastEpoch() != 5 {
		t.Errorf("after a seek to 12: last epoch %d, want 5", cp.lastEpoch())
	}
	cp.seekEpochs(10)
	if cp.lastEpoch() != 3 {
		t.Errorf("after a seek to 10: last epoch %d, want 3", cp.lastEpoch())
	}
	cp.seekEpochs(0)
	if cp.lastEpoch() != -1 {
		t.Errorf("after a seek to 0: last epoch %d, want -1", cp.lastEpoch())
	}
}
