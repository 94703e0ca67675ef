package metadata

import (
	"testing"
)

// rejoinedFixture: broker 1, the preferred replica of payments-0 and u-0,
// was stopped by a controlled shutdown (leadership moved to 2) and has
// registered again (incarnation 2) and been unfenced; both says whether
// it is back in the ISRs (payments-0 only, or both).
func rejoinedFixture(t *testing.T, both bool) *Image {
	t.Helper()
	img := reassignFixture(t)
	img = decide(t, img)(DecideHeartbeat(img, HeartbeatEvent{ID: 1, Incarnation: 1, WantShutdown: true}))
	img = decide(t, img)(DecideRegister(img, RegisterEvent{ID: 1, Addr: "127.0.0.1:7101", Incarnation: 2, MetadataVersion: MetadataVersion}))
	img = decide(t, img)(DecideHeartbeat(img, HeartbeatEvent{ID: 1, Incarnation: 2, MetadataOffset: int64(img.Offset())}))
	wantPartition(t, img, "payments", "payments-0 replicas=[1,2,3] isr=[2,3] leader=2 epoch=1 pepoch=1")
	img = decide(t, img)(alterISR(t, img, "payments", 1, 2, 3))
	if both {
		img = decide(t, img)(alterISR(t, img, "u", 1, 2, 3))
	}
	return img
}

// TestDecidePreferredLeadersIf: a partition moves back to its preferred
// replica only when that replica is live, in the ISR, not leading, and the
// controller's ready rule says so for that partition.
func TestDecidePreferredLeadersIf(t *testing.T) {
	only := func(topic string) func(PartitionState) bool {
		return func(p PartitionState) bool { return p.Topic == topic }
	}
	for _, tc := range []struct {
		name    string
		img     func(t *testing.T) *Image
		ready   func(PartitionState) bool
		waiting []string // PreferredWaiting, by topic
		moved   []string // the partitions moved to broker 1
	}{
		{"no rule: every waiting partition", func(t *testing.T) *Image { return rejoinedFixture(t, true) }, nil,
			[]string{"payments", "u"}, []string{"payments", "u"}},
		{"ready for none", func(t *testing.T) *Image { return rejoinedFixture(t, true) },
			func(PartitionState) bool { return false }, []string{"payments", "u"}, nil},
		{"ready for one", func(t *testing.T) *Image { return rejoinedFixture(t, true) }, only("u"),
			[]string{"payments", "u"}, []string{"u"}},
		{"ready, but not back in the ISR", func(t *testing.T) *Image { return rejoinedFixture(t, false) },
			func(PartitionState) bool { return true }, []string{"payments"}, []string{"payments"}},
		{"ready, but fenced again", func(t *testing.T) *Image {
			img := rejoinedFixture(t, true)
			return mustApply(t, img, DecideFence(img, 1, 2))
		}, func(PartitionState) bool { return true }, nil, nil},
		{"ready, but shutting down again", func(t *testing.T) *Image {
			img := rejoinedFixture(t, true)
			return decide(t, img)(DecideHeartbeat(img, HeartbeatEvent{ID: 1, Incarnation: 2, WantShutdown: true}))
		}, func(PartitionState) bool { return true }, nil, nil},
		{"ready, already leading", func(t *testing.T) *Image {
			img := rejoinedFixture(t, true)
			return mustApply(t, img, DecidePreferredLeaders(img))
		}, func(PartitionState) bool { return true }, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := tc.img(t)
			var waiting []string
			img.EachPartition(func(p PartitionState) bool {
				if PreferredWaiting(img, p) {
					waiting = append(waiting, p.Topic)
				}
				return true
			})
			if !equalStrings(waiting, tc.waiting) {
				t.Fatalf("waiting %v, want %v", waiting, tc.waiting)
			}
			recs := DecidePreferredLeadersIf(img, tc.ready)
			var moved []string
			for _, r := range recs {
				c := r.(PartitionChange)
				before := part(t, img, c.Topic)
				if c.Leader != 1 || c.LeaderEpoch != before.LeaderEpoch+1 || !equalInt32s(c.ISR, before.ISR) {
					t.Fatalf("%s: change %+v from %s: want leader 1, the next epoch, the same ISR", c.Topic, c, before)
				}
				moved = append(moved, c.Topic)
			}
			if !equalStrings(moved, tc.moved) {
				t.Fatalf("moved %v, want %v", moved, tc.moved)
			}
			if len(recs) > 0 {
				mustApply(t, img, recs)
			}
		})
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func equalInt32s(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
