package cli

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/quick"

	"paymentlog/client"
)

// partInflight's commit point against a naive version: the lowest offset
// handed over and not acknowledged, else the position, capped by the
// first offset not handed over; whatever order the acknowledgements come
// in.
func TestPartInflightCommitPointMatchesNaive(t *testing.T) {
	check := func(seed uint64, nRecs uint8, stopAt int8) bool {
		rnd := rand.New(rand.NewPCG(seed, 1))
		n := int64(nRecs)
		p := &partInflight{ceiling: -1}
		const start = 100
		acked := map[int64]bool{}
		for o := int64(start); o < start+n; o++ {
			p.sent(o)
		}
		ceiling := int64(-1)
		if stopAt >= 0 {
			ceiling = start + n + int64(stopAt)%4 // records polled, not handed over
			p.stopAt(ceiling)
		}
		position := start + n
		if ceiling >= 0 {
			position = ceiling + 3
		}
		naive := func() int64 {
			c := position
			for o := int64(start); o < start+n; o++ {
				if !acked[o] {
					c = o
					break
				}
			}
			if ceiling >= 0 && ceiling < c {
				c = ceiling
			}
			return c
		}
		var reported []int64 // the acknowledged prefix, in order, as acked reports it
		for _, i := range rnd.Perm(int(n)) {
			o := start + int64(i)
			p.acked(o, 1000+o, func(src, dst int64) {
				if dst != 1000+src {
					t.Errorf("record %d reported at target %d; acknowledged at %d", src, dst, 1000+src)
				}
				reported = append(reported, src)
			})
			acked[o] = true
			if want := offsetRange(start, naive()); !slices.Equal(reported, want[:min(len(want), int(n))]) {
				t.Logf("after acking %d: reported %v; want %v", o, reported, want)
				return false
			}
			if got, want := p.commitPoint(position), naive(); got != want {
				t.Logf("after acking %d of %d..%d: commit point %d, want %d", o, start, start+n-1, got, want)
				return false
			}
		}
		return len(p.pending) == 0
	}
	if err := quick.Check(check, &quick.Config{MaxCount: 500}); err != nil {
		t.Fatal(err)
	}
}

// A failed delivery stops the commit point at the record and is reported;
// records of a partition released meanwhile are ignored.
func TestInflightFailureAndRelease(t *testing.T) {
	f := newInflight(false)
	tp := mirrorTP("t", 0)
	for o := int64(0); o < 4; o++ {
		f.sent(tp, o)
	}
	f.delivered(tp, 0, 0, 10, nil)
	f.delivered(tp, 2, -1, 10, errTest)
	f.delivered(tp, 1, 1, 10, nil)
	f.delivered(tp, 3, 3, 10, nil)
	if c := f.commitPoint(tp, 4); c != 2 {
		t.Fatalf("commit point %d after offset 2 failed; want 2", c)
	}
	if f.failure() != errTest {
		t.Fatalf("failure %v", f.failure())
	}
	if r, b := f.totals(); r != 3 || b != 30 {
		t.Fatalf("totals %d records %d bytes; want 3 and 30", r, b)
	}
	f.forget([]clientTP{tp})
	f.delivered(tp, 5, 5, 10, nil) // released: not counted against the next owner's state
	if c := f.commitPoint(tp, 7); c != 7 || f.pending(tp) != 0 {
		t.Fatalf("after release: commit point %d, pending %d; want the position 7 and 0", c, f.pending(tp))
	}
}

type clientTP = client.TopicPartition

var errTest = errors.New("test failure")

func mirrorTP(topic string, p int32) client.TopicPartition {
	return client.TopicPartition{Topic: topic, Partition: p}
}
