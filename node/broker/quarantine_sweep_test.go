package broker

import (
	"strings"
	"testing"
	"time"

	"paymentlog/segment"
)

// A quarantine goes only when it is past its retention, its offsets are
// known, the partition has other replicas, this one is in sync with
// another and holds its last offset again in the same epoch (or its log
// start is past it).
func TestQuarantineVerdict(t *testing.T) {
	setAside := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	const retention = 168 * time.Hour
	now := setAside.Add(retention + time.Minute) // the injected clock
	// met is a quarantine of offsets 100..199 (epoch 4) on a follower in
	// the ISR of 3 replicas that fetched them again: it goes.
	met := func() quarantineFacts {
		return quarantineFacts{retention: retention, age: now.Sub(setAside),
			rng:      segment.QuarantineRange{FirstOffset: 100, LastOffset: 199, LastEpoch: 4},
			replicas: 3, inISR: true, isr: 3, hw: 250, logStart: 0, epochAt: 4}
	}
	cases := []struct {
		name   string
		change func(*quarantineFacts)
		remove bool
		why    string // in the reason it stays
	}{
		{"all conditions met", func(*quarantineFacts) {}, true, ""},
		{"HW just past the last offset", func(f *quarantineFacts) { f.hw = 200 }, true, ""},
		{"leader whose ISR holds another", func(f *quarantineFacts) { f.isr = 2 }, true, ""},
		{"log start past the last offset (retention removed them)", func(f *quarantineFacts) { f.logStart, f.hw, f.epochAt = 300, 300, -1 }, true, ""},
		{"no whole batch in it", func(f *quarantineFacts) {
			f.rng = segment.QuarantineRange{FirstOffset: -1, LastOffset: -1, LastEpoch: -1}
		}, true, ""},
		{"retention 0", func(f *quarantineFacts) { f.retention = 0 }, false, "off"},
		{"too young", func(f *quarantineFacts) { f.age = setAside.Add(retention - time.Second).Sub(setAside) }, false, "retention"},
		{"offsets unknown", func(f *quarantineFacts) { f.rng.Unknown = "corrupt" }, false, "cannot be told"},
		{"replication factor 1", func(f *quarantineFacts) { f.replicas, f.isr = 1, 1 }, false, "single replica"},
		{"not in the ISR", func(f *quarantineFacts) { f.inISR = false }, false, "not in sync"},
		{"alone in the ISR", func(f *quarantineFacts) { f.isr = 1 }, false, "not in sync"},
		{"stopped replica", func(f *quarantineFacts) { f.replicas, f.isr, f.inISR, f.hw = 0, 0, false, 0 }, false, "single replica"},
		{"not fetched again", func(f *quarantineFacts) { f.hw = 199 }, false, "not fetched again"},
		{"fetched but not committed", func(f *quarantineFacts) { f.hw = 150 }, false, "not fetched again"},
		{"another epoch's records there", func(f *quarantineFacts) { f.epochAt = 5 }, false, "epoch"},
		{"log start at the last offset", func(f *quarantineFacts) { f.logStart, f.hw = 199, 199 }, false, "not fetched again"},
	}
	for _, c := range cases {
		f := met()
		c.change(&f)
		remove, why := quarantineVerdict(f)
		if remove != c.remove || (remove && why != "") || (!remove && !strings.Contains(why, c.why)) {
			t.Errorf("%s: remove %v (%q); want %v (%q)", c.name, remove, why, c.remove, c.why)
		}
	}
}
