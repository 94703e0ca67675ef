package broker

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"paymentlog/segment"
	"paymentlog/wire"
)

// recompressBatch encodes n payment records from first, with keys, a null
// key every fifth and a header, as producer pid (-1: not idempotent) from
// seq, in codec c.
func recompressBatch(c segment.Codec, pid int64, seq int32, first, n int) []byte {
	opts := segment.BuilderOptions{ProducerID: pid, ProducerEpoch: 3, BaseSequence: seq, Compression: c}
	if pid < 0 {
		opts.ProducerID = 0 // the builder's "not idempotent"
	}
	bd := segment.NewBuilder(opts)
	for i := first; i < first+n; i++ {
		var key []byte
		if i%5 != 0 {
			key = fmt.Appendf(nil, "acct-%d", i%7)
		}
		bd.Add(int64(1_700_000_000_000+i), key, paymentJSON(i), []segment.RecordHeader{{Key: "trace", Value: []byte{byte(i)}}})
	}
	b := slices.Clone([]byte(bd.Build()))
	if segment.Batch(b).Compression() != c {
		panic(fmt.Sprintf("test batch built in %v, not %v", segment.Batch(b).Compression(), c))
	}
	return b
}

func paymentJSON(i int) []byte {
	return fmt.Appendf(nil, `{"payment_id":"pay_%08d","merchant_id":"m_%04d","amount_minor":%d,"currency":"EUR","status":"captured"}`, i, i%97, 1000+i*7)
}

// storedBatches returns copies of the batches replica id holds from offset
// from to its log end.
func storedBatches(t *testing.T, c *testCluster, id int32, from int64) []segment.Batch {
	t.Helper()
	lg := c.node(id).b.partition(testKey.topic, testKey.partition).log
	var out []segment.Batch
	for off := from; off < lg.LogEndOffset(); {
		v, err := lg.Read(off, 1<<20, -1)
		if err != nil {
			t.Fatalf("node %d: read at %d: %v", id, off, err)
		}
		if len(v.Data) == 0 {
			v.Release()
			break
		}
		if _, err := segment.SplitBatches(v.Data, func(b segment.Batch) error {
			out = append(out, segment.Batch(slices.Clone([]byte(b))))
			return nil
		}); err != nil {
			t.Fatalf("node %d: batches at %d: %v", id, off, err)
		}
		off = v.Next
		v.Release()
	}
	return out
}

// recordsOfBatch decodes a batch's records as key/value/header/timestamp
// strings, offsets relative to its base, for comparing what was sent with
// what is stored.
func recordsOfBatch(t *testing.T, b segment.Batch) []string {
	t.Helper()
	var out []string
	it := b.Iter()
	base := b.BaseOffset()
	for it.Next() {
		r := it.Record()
		key := "null"
		if r.Key != nil {
			key = string(r.Key)
		}
		out = append(out, fmt.Sprintf("+%d %d %s=%s %v", r.Offset-base, r.Timestamp, key, r.Value, r.Headers))
	}
	if err := it.Err(); err != nil {
		t.Fatalf("records of a stored batch: %v", err)
	}
	return out
}

// checkStored checks that a stored batch is the sent one in codec want:
// same records, producer fields and timestamps, a valid CRC.
func checkStored(t *testing.T, what string, stored segment.Batch, sent []byte, want segment.Codec) {
	t.Helper()
	if err := stored.Validate(); err != nil {
		t.Fatalf("%s: stored batch: %v", what, err)
	}
	if got := stored.Compression(); got != want {
		t.Fatalf("%s: stored in %v, want %v", what, got, want)
	}
	sh, _ := segment.ParseHeader(stored)
	wh, _ := segment.ParseHeader(sent)
	if sh.ProducerID != wh.ProducerID || sh.ProducerEpoch != wh.ProducerEpoch || sh.BaseSequence != wh.BaseSequence ||
		sh.LastOffsetDelta != wh.LastOffsetDelta || sh.RecordCount != wh.RecordCount ||
		sh.FirstTimestamp != wh.FirstTimestamp || sh.MaxTimestamp != wh.MaxTimestamp {
		t.Fatalf("%s: stored header %+v, sent %+v", what, sh, wh)
	}
	if got, w := recordsOfBatch(t, stored), recordsOfBatch(t, segment.Batch(sent)); !slices.Equal(got, w) {
		t.Fatalf("%s: stored records differ from those sent:\n%v\n%v", what, got, w)
	}
}

// A topic's compression.type on three brokers: the leader stores every
// batch in the topic's codec whatever the producer sent (uncompressed, lz4)
// and keeps one already in it byte for byte; the followers hold the very
// bytes the leader stored; a retried idempotent batch, rewritten again, is
// still a duplicate (its first offsets, nothing appended, not counted); a
// change of the config (to uncompressed, to lz4 with LogAppendTime, back
// to producer) applies to the next batch.
func TestProduceRecompressesToTopicCodec(t *testing.T) {
	c := newTestCluster(t, clusterOptions{})
	c.createPartition("payments", 0, []int32{1, 2, 3}, 1, 2)
	c.setMessages(testKey, MessagePolicy{Recompress: true, Codec: segment.CodecZstd})

	type sentBatch struct {
		what  string
		batch []byte
		want  segment.Codec
	}
	var sent []sentBatch
	produce := func(what string, batch []byte, want segment.Codec) {
		t.Helper()
		base := int64(0)
		for _, s := range sent {
			base += int64(segment.Batch(s.batch).RecordCount())
		}
		if r := mustProduce(t, c, wire.AcksAll, slices.Clone(batch)); r.Err != wire.None || r.BaseOffset != base {
			t.Fatalf("%s: %+v, want base offset %d", what, r, base)
		}
		sent = append(sent, sentBatch{what, batch, want})
	}
	first := recompressBatch(segment.CodecNone, 5, 0, 0, 200)
	produce("uncompressed to zstd", first, segment.CodecZstd)
	produce("lz4 to zstd", recompressBatch(segment.CodecLZ4, 5, 200, 200, 100), segment.CodecZstd)
	zstd := recompressBatch(segment.CodecZstd, 5, 300, 300, 100)
	produce("zstd to zstd", zstd, segment.CodecZstd)
	if st := c.node(1).b.Stats(); st.RecompressedBatches != 2 || st.RecompressedSentBytes != uint64(len(first)+len(sent[1].batch)) ||
		st.RecompressedStoredBytes == 0 || st.RecompressedStoredBytes >= st.RecompressedSentBytes {
		t.Fatalf("after 2 rewritten batches: %d batches, %d bytes sent, %d stored", st.RecompressedBatches, st.RecompressedSentBytes, st.RecompressedStoredBytes)
	}

	// The retry of the first batch, rewritten again, is its duplicate.
	if r := mustProduce(t, c, wire.AcksAll, slices.Clone(first)); r.Err != wire.None || r.BaseOffset != 0 {
		t.Fatalf("retry of the first batch: %+v, want its original offset 0", r)
	}
	if _, _, leo := infoOf(t, c, 1); leo != 400 {
		t.Fatalf("log end %d after the retry, want 400: the duplicate was appended", leo)
	}
	if n := c.node(1).b.Stats().RecompressedBatches; n != 2 {
		t.Fatalf("%d batches counted rewritten after a duplicate, want 2", n)
	}

	c.setMessages(testKey, MessagePolicy{Recompress: true, Codec: segment.CodecNone})
	produce("zstd to uncompressed", recompressBatch(segment.CodecZstd, 5, 400, 400, 100), segment.CodecNone)
	c.setMessages(testKey, MessagePolicy{Recompress: true, Codec: segment.CodecLZ4, LogAppendTime: true})
	produce("uncompressed to lz4, stamped", recompressBatch(segment.CodecNone, -1, -1, 500, 100), segment.CodecLZ4)
	c.setMessages(testKey, MessagePolicy{})
	produce("uncompressed as sent", recompressBatch(segment.CodecNone, 5, 500, 600, 100), segment.CodecNone)

	waitInSync(t, c, testKey)
	leader := storedBatches(t, c, 1, 0)
	if len(leader) != len(sent) {
		t.Fatalf("the leader holds %d batches, want %d", len(leader), len(sent))
	}
	for i, s := range sent {
		stored := leader[i]
		if s.what == "uncompressed to lz4, stamped" {
			if !stored.LogAppendTime() {
				t.Fatalf("%s: no log-append-time bit", s.what)
			}
			// The stamp changed the timestamps: compare the records
			// and codec only, through a copy carrying the sent times.
			if got := stored.Compression(); got != s.want {
				t.Fatalf("%s: stored in %v", s.what, got)
			}
			back, err := stored.Recompress(segment.CodecNone)
			if err != nil || !bytes.Equal(back[segment.HeaderSize:], s.batch[segment.HeaderSize:]) {
				t.Fatalf("%s: records section differs from the one sent (%v)", s.what, err)
			}
			continue
		}
		checkStored(t, s.what, stored, s.batch, s.want)
	}
	if !bytes.Equal(leader[2][segment.HeaderSize:], zstd[segment.HeaderSize:]) {
		t.Fatal("a batch sent in the topic's codec was rewritten")
	}
	want := logBytes(t, c.node(1).b.partition("payments", 0).log, 700)
	for _, id := range []int32{2, 3} {
		if got := logBytes(t, c.node(id).b.partition("payments", 0).log, 700); !bytes.Equal(got, want) {
			t.Fatalf("replica %d holds other bytes than the leader (%d, %d)", id, len(got), len(want))
		}
	}
	for _, id := range []int32{1, 2, 3} {
		if got := readAll(t, c.node(id).b.partition("payments", 0).log, 700); len(got) != 700 || got[0] != string(paymentJSON(0)) ||
			got[699] != string(paymentJSON(699)) {
			t.Fatalf("replica %d reads %d records (first %q, last %q)", id, len(got), got[0], got[699])
		}
	}
}

// The size stored is checked, as Kafka does after recompressing: a batch
// that fits the topic's max.message.bytes as sent in zstd but not once
// decompressed for an uncompressed topic is refused, RecordTooLarge,
// naming both sizes and the config; nothing is appended.
func TestRecompressedBatchOverTheLimitRefused(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 1})
	c.createPartition("payments", 0, []int32{1}, 1, 1)
	small := recompressBatch(segment.CodecZstd, -1, -1, 0, 200)
	plain, err := segment.Batch(slices.Clone(small)).Recompress(segment.CodecNone)
	if err != nil {
		t.Fatal(err)
	}
	limit := len(small) + (len(plain)-len(small))/2
	c.setMessages(testKey, MessagePolicy{Recompress: true, Codec: segment.CodecNone, MaxBytes: limit})
	r := mustProduce(t, c, wire.AcksLeader, slices.Clone(small))
	if r.Err != wire.RecordTooLarge || !strings.Contains(r.Message, "compression.type=uncompressed") ||
		!strings.Contains(r.Message, fmt.Sprintf("not zstd as sent (%d bytes)", len(small))) ||
		!strings.Contains(r.Message, fmt.Sprintf("batch of %d bytes is larger than topic payments's max.message.bytes (%d)", len(plain), limit)) {
		t.Fatalf("a batch of %d bytes sent, %d stored, limit %d: %+v", len(small), len(plain), limit, r)
	}
	if _, _, leo := infoOf(t, c, 1); leo != 0 {
		t.Fatalf("log end %d after a refusal", leo)
	}
	c.setMessages(testKey, MessagePolicy{Recompress: true, Codec: segment.CodecNone, MaxBytes: len(plain)})
	if r := mustProduce(t, c, wire.AcksLeader, slices.Clone(small)); r.Err != wire.None {
		t.Fatalf("at a limit of the stored size: %+v", r)
	}
	if got := storedBatches(t, c, 1, 0); len(got) != 1 || len(got[0]) != len(plain) || got[0].Compression() != segment.CodecNone {
		t.Fatalf("stored %d batches", len(got))
	}
}
