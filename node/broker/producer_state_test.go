package broker

import (
	"math"
	"testing"
)

func TestProducerStateSequences(t *testing.T) {
	s := newProducerState()
	steps := []struct {
		pid         int64
		epoch       int16
		seq, delta  int32
		want        seqVerdict
		base, dupAt int64
	}{
		{pid: 7, epoch: 0, seq: 3, delta: 0, want: seqUnknownProducer},       // new producer must start at 0
		{pid: 7, epoch: 0, seq: 0, delta: 4, want: seqOK, base: 100},         // seqs 0..4
		{pid: 7, epoch: 0, seq: 0, delta: 4, want: seqDuplicate, dupAt: 100}, // retry
		{pid: 7, epoch: 0, seq: 6, delta: 0, want: seqOutOfOrder},            // gap
		{pid: 7, epoch: 0, seq: 5, delta: 1, want: seqOK, base: 105},         // seqs 5..6
		{pid: 7, epoch: 0, seq: 7, delta: 0, want: seqOK, base: 107},
		{pid: 7, epoch: 0, seq: 8, delta: 0, want: seqOK, base: 108},
		{pid: 7, epoch: 0, seq: 9, delta: 0, want: seqOK, base: 109},
		{pid: 7, epoch: 0, seq: 10, delta: 0, want: seqOK, base: 110}, // the first batch is forgotten now
		{pid: 7, epoch: 0, seq: 0, delta: 4, want: seqOutOfOrder},
		{pid: 7, epoch: 0, seq: 7, delta: 0, want: seqDuplicate, dupAt: 107},
		{pid: 7, epoch: -1 + 0, seq: 0, delta: 0, want: seqInvalidEpoch},
		{pid: 7, epoch: 1, seq: 4, delta: 0, want: seqOutOfOrder}, // a new epoch starts at 0
		{pid: 7, epoch: 1, seq: 0, delta: 0, want: seqOK, base: 111},
		{pid: 8, epoch: 0, seq: 0, delta: 0, want: seqOK, base: 112}, // independent producer
	}
	for i, st := range steps {
		v, b := s.check(st.pid, st.epoch, st.seq, st.delta)
		if v != st.want {
			t.Fatalf("step %d: verdict %d, want %d", i, v, st.want)
		}
		if v == seqDuplicate && b.baseOffset != st.dupAt {
			t.Fatalf("step %d: duplicate at %d, want %d", i, b.baseOffset, st.dupAt)
		}
		if v == seqOK {
			s.update(st.pid, st.epoch, st.seq, st.delta, st.base, 0)
		}
	}
}

func TestProducerStateWraps(t *testing.T) {
	s := newProducerState()
	s.update(1, 0, 0, 0, 0, 0)
	s.producers[1].batches[0].lastSeq = math.MaxInt32 - 1
	if v, _ := s.check(1, 0, math.MaxInt32, 1); v != seqOK {
		t.Fatalf("verdict %d", v)
	}
	s.update(1, 0, math.MaxInt32, 1, 1, 0)
	if got := s.producers[1].batches[1].lastSeq; got != 0 {
		t.Fatalf("wrapped last seq %d", got)
	}
	if v, _ := s.check(1, 0, 1, 0); v != seqOK {
		t.Fatalf("after wrap verdict %d", v)
	}
}

// A retry of one batch of a run the log cleaner merged into one empty
// batch (which a restart rebuilds the state from) is a duplicate, answered
// with the offsets of its sequence numbers; a batch reaching past the run
// is not.
func TestProducerStateRetryInsideAMergedRun(t *testing.T) {
	s := newProducerState()
	s.update(7, 0, 0, 9, 100, 0) // a merged run: sequences 0..9 at offsets 100..109
	for _, c := range []struct {
		seq, delta int32
		want       seqVerdict
		base, last int64
	}{
		{seq: 3, delta: 2, want: seqDuplicate, base: 103, last: 105},
		{seq: 0, delta: 0, want: seqDuplicate, base: 100, last: 100},
		{seq: 9, delta: 0, want: seqDuplicate, base: 109, last: 109},
		{seq: 0, delta: 9, want: seqDuplicate, base: 100, last: 109},
		{seq: 8, delta: 3, want: seqOutOfOrder},
		{seq: 11, delta: 0, want: seqOutOfOrder},
		{seq: 10, delta: 0, want: seqOK},
	} {
		v, b := s.check(7, 0, c.seq, c.delta)
		if v != c.want || (v == seqDuplicate && (b.baseOffset != c.base || b.lastOffset != c.last)) {
			t.Fatalf("sequences %d..%d: verdict %d at %d..%d, want %d at %d..%d",
				c.seq, c.seq+c.delta, v, b.baseOffset, b.lastOffset, c.want, c.base, c.last)
		}
	}
}
