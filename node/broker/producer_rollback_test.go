package broker

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// replayed is the producer state a replay of log gives.
func replayed(log []pendingBatch) map[int64]*producerEntry {
	s := newProducerState()
	for _, b := range log {
		s.update(b.pid, b.epoch, b.firstSeq, b.delta, b.baseOffset, 0)
	}
	return s.producers
}

// TestProducerStateTruncateMatchesReplay: random appends (idempotent or
// not, several producers, epoch bumps, one producer's sequence wrapping at
// MaxInt32), HW advances and truncations to a
// batch boundary. After every step the state equals a replay of the log
// that remains; a truncation that truncate refuses (below stableEnd) is
// done by replaying, as the fetcher does.
func TestProducerStateTruncateMatchesReplay(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 7))
		s := newProducerState()
		var log []pendingBatch // every batch, pid -1 for a non-idempotent one
		var leo, hw int64
		seqs := map[int64]int32{4: math.MaxInt32 - 5} // producer 4 wraps (trusted as in a replay)
		epochs := map[int64]int16{}
		for step := range 200 {
			switch op := rng.IntN(10); {
			case op < 6: // append
				b := pendingBatch{pid: -1, firstSeq: -1, delta: int32(rng.IntN(3)), baseOffset: leo}
				if rng.IntN(5) > 0 {
					b.pid = int64(1 + rng.IntN(4))
					if rng.IntN(20) == 0 {
						epochs[b.pid]++
						seqs[b.pid] = 0
					}
					b.epoch, b.firstSeq = epochs[b.pid], seqs[b.pid]
					seqs[b.pid] = nextSeq(b.firstSeq, b.delta+1)
				}
				log = append(log, b)
				leo = b.lastOffset() + 1
				s.update(b.pid, b.epoch, b.firstSeq, b.delta, b.baseOffset, 0)
				s.advance(hw)
			case op < 8: // the HW moves up
				hw += rng.Int64N(leo - hw + 1)
				s.advance(hw)
			default: // truncate to a batch boundary, sometimes below the HW
				k := len(log) - rng.IntN(min(len(log), 6)+1)
				if rng.IntN(8) == 0 {
					k = rng.IntN(len(log) + 1)
				}
				log = log[:k]
				leo = 0
				if k > 0 {
					leo = log[k-1].lastOffset() + 1
				}
				hw = min(hw, leo)
				for pid := range seqs { // the producers carry on from what the log holds
					seqs[pid], epochs[pid] = 0, 0
				}
				seqs[4] = math.MaxInt32 - 5
				for _, b := range log {
					if b.pid >= 0 {
						seqs[b.pid], epochs[b.pid] = nextSeq(b.firstSeq, b.delta+1), b.epoch
					}
				}
				if !s.truncate(leo) {
					s = newProducerState()
					for _, b := range log {
						s.update(b.pid, b.epoch, b.firstSeq, b.delta, b.baseOffset, 0)
					}
					s.advance(hw)
				}
			}
			if want := replayed(log); !reflect.DeepEqual(s.producers, want) {
				t.Fatalf("seed %d step %d: state %s, replay %s", seed, step, render(s.producers), render(want))
			}
			if s.stableEnd > leo {
				t.Fatalf("seed %d step %d: stable end %d past the log end %d", seed, step, s.stableEnd, leo)
			}
		}
	}
}

// render prints a producer map in producer id order.
func render(m map[int64]*producerEntry) string {
	pids := slices.Sorted(maps.Keys(m))
	out := ""
	for _, pid := range pids {
		out += fmt.Sprintf("%d/%d@%d%v ", pid, m[pid].epoch, m[pid].lastTs, m[pid].batches)
	}
	return out
}

// TestProducerStatePendingStaysBounded: with the HW stuck (acks=1 writes
// while the ISR cannot catch up), the batches kept for a rollback stay
// bounded; a truncation below what was given up is refused (the log is
// replayed instead).
func TestProducerStatePendingStaysBounded(t *testing.T) {
	s := newProducerState()
	n := 3*maxPendingBatches + 17
	for i := range n {
		s.update(1, 0, int32(i), 0, int64(i), 0)
	}
	if len(s.pending) >= 2*maxPendingBatches || s.stableEnd == 0 {
		t.Fatalf("%d pending, stable end %d", len(s.pending), s.stableEnd)
	}
	if s.truncate(s.stableEnd - 1) {
		t.Fatal("truncate below the stable end accepted")
	}
	if !s.truncate(int64(n - 2)) {
		t.Fatal("truncate above the stable end refused")
	}
	if e := s.producers[1]; e.batches[len(e.batches)-1].lastSeq != int32(n-3) {
		t.Fatalf("after truncation: %v", e.batches)
	}
}
