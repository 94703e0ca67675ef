package broker

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"paymentlog/segment"
	"paymentlog/wire"
)

func (c *testCluster) setMessages(key tp, pol MessagePolicy) {
	c.mu.Lock()
	st := c.parts[key]
	st.Messages = pol
	c.mu.Unlock()
	c.push(key)
}

// timedBatch encodes one record per timestamp.
func timedBatch(pid int64, seq int32, ts ...int64) []byte {
	bd := segment.NewBuilder(segment.BuilderOptions{ProducerID: pid, ProducerEpoch: 0, BaseSequence: seq})
	if pid < 0 {
		bd = segment.NewBuilder(segment.BuilderOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1})
	}
	for i, t := range ts {
		bd.Add(t, nil, []byte{byte('a' + i)}, nil)
	}
	return slices.Clone([]byte(bd.Build()))
}

// recordTimesOf returns the timestamps of a replica's records from offset
// from up to its HW.
func recordTimesOf(t *testing.T, c *testCluster, id int32, from int64) []int64 {
	t.Helper()
	p := c.node(id).b.partition(testKey.topic, testKey.partition)
	hw, _, _ := infoOf(t, c, id)
	var out []int64
	v, err := p.log.Read(from, 1<<20, hw)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Release()
	if _, err := segment.SplitBatches(v.Data, func(b segment.Batch) error {
		it := b.Iter()
		for it.Next() {
			if it.Record().Offset >= from {
				out = append(out, it.Record().Timestamp)
			}
		}
		return it.Err()
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// A topic's message configs, applied without a restart: timestamp bounds
// refuse a batch with a record outside them, whole (InvalidTimestamp,
// naming the config); LogAppendTime gives every record the leader's clock,
// on the followers too, says so in the answer (a duplicate's: the
// original's), and
// ignores the bounds; a producer's batch with the log-append-time bit is
// refused; max.message.bytes refuses a larger batch by name.
func TestProduceMessagePolicy(t *testing.T) {
	const now = 1_800_000_000_000
	var clock atomic.Int64
	clock.Store(now)
	c := newTestCluster(t, clusterOptions{nodes: 2, cleanerInterval: -1, now: func() time.Time { return time.UnixMilli(clock.Load()) }})
	c.createPartition("payments", 0, []int32{1, 2}, 1, 2)
	produce := func(b []byte) wire.ProducePartitionResponse {
		t.Helper()
		return mustProduce(t, c, wire.AcksAll, b)
	}
	if r := produce(timedBatch(-1, -1, 1000, now+1e9)); r.Err != wire.None || r.LogAppendTime != 0 {
		t.Fatalf("no policy: %+v", r)
	}

	hour := TimestampBound{Set: true, Max: time.Hour}
	c.setMessages(testKey, MessagePolicy{Before: hour, After: TimestampBound{Set: true}})
	_, _, leo := infoOf(t, c, 1)
	for _, bad := range []struct {
		ts   []int64
		want string
	}{
		{[]int64{now, now - 3600_001}, "record 1 of the batch has timestamp 1799996399999, more than 3600000 ms before the leader's clock (1800000000000): topic payments sets message.timestamp.before.max.ms=3600000"},
		{[]int64{now + 1, now}, "record 0 of the batch has timestamp 1800000000001, more than 0 ms after the leader's clock (1800000000000): topic payments sets message.timestamp.after.max.ms=0"},
	} {
		if r := produce(timedBatch(-1, -1, bad.ts...)); r.Err != wire.InvalidTimestamp || r.Message != bad.want || r.BaseOffset != -1 {
			t.Errorf("timestamps %v: %+v", bad.ts, r)
		}
	}
	if _, _, got := infoOf(t, c, 1); got != leo {
		t.Fatalf("refused batches moved the log end from %d to %d", leo, got)
	}
	r := produce(timedBatch(-1, -1, now-3600_000, now))
	if r.Err != wire.None || r.BaseOffset != leo {
		t.Fatalf("timestamps at the bounds: %+v", r)
	}
	// A group's lag in time reads the batch's first timestamp, for any
	// offset in it (the second record's too).
	waitInSync(t, c, testKey)
	for _, off := range []int64{leo, leo + 1} {
		if ts, ok := c.node(1).b.BatchTimestampAt("payments", 0, off); !ok || ts != now-3600_000 {
			t.Fatalf("BatchTimestampAt(%d): %d %v, want %d", off, ts, ok, now-3600_000)
		}
	}
	if _, ok := c.node(1).b.BatchTimestampAt("payments", 0, leo+2); ok {
		t.Fatal("BatchTimestampAt at the HW answered")
	}

	c.setMessages(testKey, MessagePolicy{LogAppendTime: true, Before: hour, After: hour})
	r = produce(timedBatch(7, 0, 1000, 2000, 3000))
	if r.Err != wire.None || r.LogAppendTime != now {
		t.Fatalf("LogAppendTime: %+v", r)
	}
	first := r.BaseOffset
	waitInSync(t, c, testKey)
	if ts, ok := c.node(2).b.BatchTimestampAt("payments", 0, first+2); !ok || ts != now {
		t.Fatalf("BatchTimestampAt of a LogAppendTime batch on the follower: %d %v, want the append time %d", ts, ok, now)
	}
	for _, id := range []int32{1, 2} {
		if got := recordTimesOf(t, c, id, first); !slices.Equal(got, []int64{now, now, now}) {
			t.Fatalf("node %d: record timestamps %v, want the append time", id, got)
		}
	}
	clock.Add(5000)
	if dup := produce(timedBatch(7, 0, 1000, 2000, 3000)); dup.Err != wire.None || dup.BaseOffset != first || dup.LogAppendTime != now {
		t.Fatalf("duplicate: %+v, want the original's offset and time", dup)
	}
	clock.Store(now)
	stamped := timedBatch(-1, -1, now)
	segment.Batch(stamped).StampLogAppendTime(now)
	if r := produce(stamped); r.Err != wire.CorruptMessage || !strings.Contains(r.Message, "log-append-time attribute") {
		t.Fatalf("a producer's batch with the bit: %+v", r)
	}

	small := timedBatch(-1, -1, now)
	big := timedBatch(-1, -1, now, now, now, now, now, now, now, now, now, now)
	c.setMessages(testKey, MessagePolicy{MaxBytes: len(big) - 1})
	want := fmt.Sprintf("batch of %d bytes is larger than topic payments's max.message.bytes (%d)", len(big), len(big)-1)
	if r := produce(big); r.Err != wire.RecordTooLarge || r.Message != want {
		t.Fatalf("batch above max.message.bytes: %+v, want %q", r, want)
	}
	if r := produce(small); r.Err != wire.None {
		t.Fatalf("batch below max.message.bytes: %+v", r)
	}
	c.setMessages(testKey, MessagePolicy{MaxBytes: len(big) - 1, MaxBytesFromCluster: true})
	want = fmt.Sprintf("batch of %d bytes is larger than the cluster's message.max.bytes (%d), which topic payments takes", len(big), len(big)-1)
	if r := produce(big); r.Err != wire.RecordTooLarge || r.Message != want {
		t.Fatalf("batch above the cluster's message.max.bytes: %+v, want %q", r, want)
	}
	c.setMessages(testKey, MessagePolicy{})
	if r := produce(big); r.Err != wire.None {
		t.Fatalf("the limit deleted: %+v", r)
	}
}
