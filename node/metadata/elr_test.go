package metadata

import (
	"slices"
	"testing"

	"paymentlog/wire"
)

// A broker that restarts stays an eligible leader replica when its logs are
// synced (--fsync always keeps what it fetched); under --fsync interval or
// never, or with new storage, it leaves every ELR; and it leaves the ELR
// of a partition whose log it found with a damaged tail (TornReplicas),
// only that one.
func TestRestartKeepsELRUnlessLogsMayBeShort(t *testing.T) {
	for _, tc := range []struct {
		name     string
		unsynced bool
		new      bool
		torn     int32 // the partition whose log it found torn, -1 none
		keep     bool
	}{
		{"synced", false, false, -1, true},
		{"unsynced", true, false, -1, false},
		{"new storage", false, true, -1, false},
		{"torn", false, false, 0, false},
		{"another partition torn", false, false, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := seededImage(t)
			apply := applier(t, &img)
			// Fence payments-0's followers one by one: the second leaves
			// an ISR going below min ISR 2 and enters the ELR.
			p, _ := img.Partition("payments", 0)
			var last int32
			for _, r := range p.Replicas {
				if r != p.Leader {
					b, _ := img.Broker(r)
					apply(DecideFence(img, r, b.Incarnation), nil)
					last = r
				}
			}
			if p, _ = img.Partition("payments", 0); !slices.Equal(p.ELR, []int32{last}) {
				t.Fatalf("ELR after fencing: %s", p)
			}
			var torn []wire.PartitionRef
			if tc.torn >= 0 {
				torn = []wire.PartitionRef{{TopicID: p.TopicID, Partition: tc.torn}}
			}
			apply(DecideRegister(img, RegisterEvent{ID: last, Addr: "127.0.0.1:1", Incarnation: 2,
				ControllerEligible: last < 3, NewStorage: tc.new, UnsyncedLogs: tc.unsynced, TornReplicas: torn}))
			p, _ = img.Partition("payments", 0)
			if p.InELR(last) != tc.keep {
				t.Fatalf("after broker %d restarted: %s", last, p)
			}
			checkInvariants(t, img)
		})
	}
}

// applier returns a function that applies a decision's records to *img as
// its next entry, failing the test on an error.
func applier(t testing.TB, img **Image) func([]Record, error) {
	return func(recs []Record, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		next, _, err := (*img).ApplyEntry((*img).Offset()+1, recs)
		if err != nil {
			t.Fatal(err)
		}
		*img = next
	}
}

// lostSeeds are the fuzz seeds of a lost last ISR member: the entry of its
// registration with new storage, which empties payments-0's ISR (min ISR
// 1, so no ELR), and the snapshot of the image after it.
func lostSeeds(tb testing.TB) (entry, snapshot []byte) {
	tb.Helper()
	img := seededImage(tb)
	apply := applier(tb, &img)
	apply(DecideAlterConfigs(img, AlterConfigsEvent{Topic: "payments", Set: map[string]string{ConfigMinInsyncReplicas: "1"}}))
	p, _ := img.Partition("payments", 0)
	for _, r := range append(slices.Clone(p.Replicas[1:]), p.Replicas[0]) {
		b, _ := img.Broker(r)
		apply(DecideFence(img, r, b.Incarnation), nil)
	}
	leader, _ := img.Broker(p.Replicas[0])
	recs, err := DecideRegister(img, RegisterEvent{ID: leader.ID, Addr: leader.Addr, Incarnation: leader.Incarnation + 1,
		ControllerEligible: leader.ControllerEligible, NewStorage: true})
	apply(recs, err)
	if q, _ := img.Partition("payments", 0); len(q.ISR) != 0 || !q.InLost(leader.ID) {
		tb.Fatalf("payments-0 after its last ISR member %d came back wiped: %s", leader.ID, q)
	}
	if entry, err = EncodeEntry(recs...); err != nil {
		tb.Fatal(err)
	}
	return entry, img.MarshalSnapshot()
}

// TestWriteLostFuzzSeeds keeps the lost-storage seeds of FuzzDecodeEntry
// and FuzzUnmarshalSnapshot in sync (run with -rewrite).
func TestWriteLostFuzzSeeds(t *testing.T) {
	entry, snap := lostSeeds(t)
	checkSeedFiles(t, "seed-lost", entry, "seed-image-lost", snap)
}
