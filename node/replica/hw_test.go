package replica

import (
	"testing"
	"testing/quick"
)

// naiveHW counts offsets up one by one: the HW is the largest offset o such
// that every member holds o records, if enough members exist; never below cur.
func naiveHW(cur int64, leos []int64, minISR int) int64 {
	if len(leos) == 0 || len(leos) < minISR {
		return cur
	}
	hw := cur
	for o := cur + 1; ; o++ {
		for _, l := range leos {
			if l < o {
				return hw
			}
		}
		hw = o
	}
}

func TestNextHWMatchesNaive(t *testing.T) {
	f := func(cur uint8, raw []uint8, minISR uint8) bool {
		leos := make([]int64, len(raw)%6)
		for i := range leos {
			leos[i] = int64(raw[i]) - 1 // -1: unknown LEO
		}
		return NextHW(int64(cur), leos, int(minISR%5)) == naiveHW(int64(cur), leos, int(minISR%5))
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 20000}); err != nil {
		t.Fatal(err)
	}
}

func TestNextHWNeverDecreases(t *testing.T) {
	f := func(cur uint16, raw []uint16, minISR uint8) bool {
		leos := make([]int64, len(raw))
		for i, v := range raw {
			leos[i] = int64(v)
		}
		return NextHW(int64(cur), leos, int(minISR%4)) >= int64(cur)
	}
	if err := quick.Check(f, nil); err != nil {
		t.Fatal(err)
	}
}
