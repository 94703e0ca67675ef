package metadata

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// rackImage is an image with brokers 1..len(racks) registered in those
// racks ("" : none) and unfenced (incarnation 1).
func rackImage(t *testing.T, racks []string) *Image {
	t.Helper()
	img := EmptyImage()
	for i, r := range racks {
		id := int32(i + 1)
		img = mustApply(t, img, []Record{BrokerRegistered{ID: id, Addr: fmt.Sprintf("127.0.0.1:71%02d", id), Incarnation: 1,
			MetadataVersion: MetadataVersion, Rack: r}})
		img = mustApply(t, img, []Record{BrokerUnfenced{ID: id, Incarnation: 1}})
	}
	return img
}

func TestCheckRack(t *testing.T) {
	for _, ok := range []string{"", "a", "eu-west-1a", "rack_7", "dc1:row2.r3"} {
		if why := CheckRack(ok); why != "" {
			t.Errorf("%q refused: %s", ok, why)
		}
	}
	for _, bad := range []string{"a b", "é", "r/1", strings.Repeat("r", MaxRackLen+1), "\x00x"} {
		if CheckRack(bad) == "" {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestRackAlternated(t *testing.T) {
	racks := map[int32]string{3: "a", 1: "a", 2: "a", 5: "b", 4: "b", 6: "c"}
	got := RackAlternated([]int32{6, 5, 4, 3, 2, 1}, racks)
	if want := []int32{1, 4, 6, 2, 5, 3}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if RackKeys([]int32{1, 2}, func(int32) string { return "" }) != nil {
		t.Fatal("brokers without racks got rack keys")
	}
}

// TestRackAwarePlacementProperties: for any brokers spread over racks
// (some without one), topic creation gives every partition distinct live
// replicas in min(rf, racks) different racks, and spreads preferred
// leaders evenly; adding partitions afterwards ends with the placement a
// creation with the final count would have made.
func TestRackAwarePlacementProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for iter := range 1000 {
		nb := 1 + rng.IntN(9)
		nr := 1 + rng.IntN(4)
		racks := make([]string, nb)
		for i := range racks {
			racks[i] = fmt.Sprintf("r%d", rng.IntN(nr))
			if rng.IntN(8) == 0 {
				racks[i] = ""
			}
		}
		rf := 1 + rng.IntN(nb)
		n1 := 1 + rng.IntN(12)
		n := n1 + rng.IntN(12)
		seed := rng.Uint64()
		img := rackImage(t, racks)
		keys := map[string]bool{}
		for i, r := range racks {
			keys[rackKey(int32(i+1), r)] = true
		}
		domains := len(keys)
		what := fmt.Sprintf("iter %d: racks %q, rf %d", iter, racks, rf)

		recs, err := DecideCreateTopic(img, CreateTopicEvent{Name: "t", ID: "tid", Partitions: int32(n), RF: int32(rf), Seed: seed})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		whole := mustApply(t, img, recs)
		leaders := map[int32]int{}
		wt, _ := whole.Topic("t")
		for _, p := range wt.Partitions {
			used := map[string]bool{}
			for _, r := range p.Replicas {
				if !whole.Live(r) {
					t.Fatalf("%s: %s: replica %d not live", what, p, r)
				}
				used[rackKey(r, racks[r-1])] = true
			}
			if len(p.Replicas) != rf || len(used) != min(rf, domains) || hasRepeats(p.Replicas) {
				t.Fatalf("%s: %s spans %d racks, want %d", what, p, len(used), min(rf, domains))
			}
			leaders[p.Leader]++
		}
		for id, c := range leaders {
			if c < n/nb || c > (n+nb-1)/nb {
				t.Fatalf("%s: %d partitions, broker %d leads %d (%v)", what, n, id, c, leaders)
			}
		}

		recs, err = DecideCreateTopic(img, CreateTopicEvent{Name: "t", ID: "tid", Partitions: int32(n1), RF: int32(rf), Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		grown := mustApply(t, img, recs)
		if n > n1 {
			if recs, err = DecideCreatePartitions(grown, CreatePartitionsEvent{Name: "t", Count: int32(n), Seed: rng.Uint64()}); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			grown = mustApply(t, grown, recs)
		}
		gt, _ := grown.Topic("t")
		for i, p := range gt.Partitions {
			if !slices.Equal(p.Replicas, wt.Partitions[i].Replicas) {
				t.Fatalf("%s: %d then %d partitions: partition %d has %v, a creation with %d places %v",
					what, n1, n, i, p.Replicas, n, wt.Partitions[i].Replicas)
			}
		}
	}
}

func hasRepeats(xs []int32) bool {
	s := slices.Clone(xs)
	slices.Sort(s)
	return len(slices.Compact(s)) != len(xs)
}

// TestRackAwareCreateSpreadsOverTwoZones: six brokers in two zones, RF 3:
// every partition has replicas in both zones, so losing either zone leaves
// each partition a replica; leaders alternate between the zones.
func TestRackAwareCreateSpreadsOverTwoZones(t *testing.T) {
	img := rackImage(t, []string{"z1", "z1", "z1", "z2", "z2", "z2"})
	recs, err := DecideCreateTopic(img, CreateTopicEvent{Name: "t", ID: "tid", Partitions: 12, RF: 3, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	img = mustApply(t, img, recs)
	tp, _ := img.Topic("t")
	zone := func(id int32) string { return map[bool]string{true: "z1", false: "z2"}[id <= 3] }
	perZone := map[string]int{}
	for _, p := range tp.Partitions {
		zs := map[string]bool{}
		for _, r := range p.Replicas {
			zs[zone(r)] = true
		}
		if len(zs) != 2 {
			t.Fatalf("%s has replicas in one zone only", p)
		}
		perZone[zone(p.Leader)]++
	}
	if perZone["z1"] != 6 || perZone["z2"] != 6 {
		t.Fatalf("leaders per zone %v, want 6 and 6", perZone)
	}
}

// TestReplicationFactorChangesKeepRacksApart: raising a replication factor
// adds a replica in a rack the partition is not in yet, even when a broker
// of its own rack holds fewer replicas; lowering it drops a replica whose
// rack another replica shares.
func TestReplicationFactorChangesKeepRacksApart(t *testing.T) {
	img := rackImage(t, []string{"a", "a", "b"})
	// Partition 0 on 1 (rack a) only; broker 2 (rack a) holds nothing.
	img = mustApply(t, img, []Record{
		TopicCreated{Name: "t", ID: "tid", Partitions: 1, RF: 1, MinISR: 1},
		PartitionCreated{Topic: "t", TopicID: "tid", Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1},
		TopicCreated{Name: "u", ID: "uid", Partitions: 2, RF: 1, MinISR: 1},
		PartitionCreated{Topic: "u", TopicID: "uid", Partition: 0, Replicas: []int32{3}, ISR: []int32{3}, Leader: 3},
		PartitionCreated{Topic: "u", TopicID: "uid", Partition: 1, Replicas: []int32{3}, ISR: []int32{3}, Leader: 3},
	})
	recs, err := DecideReplicationFactor(img, ReplicationFactorEvent{Topic: "t", RF: 2})
	if err != nil {
		t.Fatal(err)
	}
	img = mustApply(t, img, recs)
	p, _ := img.Partition("t", 0)
	if got := p.Target(); !slices.Equal(got, []int32{1, 3}) {
		t.Fatalf("RF 1 -> 2 targets %v, want [1 3] (broker 3 is the other rack)", got)
	}

	img2 := rackImage(t, []string{"a", "b", "a"})
	img2 = mustApply(t, img2, []Record{
		TopicCreated{Name: "t", ID: "tid", Partitions: 1, RF: 3, MinISR: 1},
		PartitionCreated{Topic: "t", TopicID: "tid", Partition: 0, Replicas: []int32{1, 3, 2}, ISR: []int32{1, 3, 2}, Leader: 1},
	})
	recs, err = DecideReplicationFactor(img2, ReplicationFactorEvent{Topic: "t", RF: 2})
	if err != nil {
		t.Fatal(err)
	}
	img2 = mustApply(t, img2, recs)
	p, _ = img2.Partition("t", 0)
	if got := p.Target(); !slices.Equal(got, []int32{1, 2}) {
		t.Fatalf("RF 3 -> 2 targets %v, want [1 2] (3 shares rack a with the leader; without racks 2, the last, would go)", got)
	}
}

// TestRegisterRack: the rack is registered, shown to clients, kept by
// snapshots; a bad one is refused, and so is a repeat of the same
// incarnation naming another rack.
func TestRegisterRack(t *testing.T) {
	img := EmptyImage()
	ev := RegisterEvent{ID: 1, Addr: "127.0.0.1:7101", Incarnation: 5, MetadataVersion: MetadataVersion, Rack: "eu-1a"}
	recs, err := DecideRegister(img, ev)
	if err != nil {
		t.Fatal(err)
	}
	img = mustApply(t, img, recs)
	if got := FormatRecord(recs[0]); !strings.Contains(got, `rack="eu-1a"`) {
		t.Fatalf("record %s", got)
	}
	if bi := img.BrokerInfos(); len(bi) != 1 || bi[0].Rack != "eu-1a" {
		t.Fatalf("broker infos %+v", bi)
	}
	back, err := UnmarshalSnapshot(0, img.MarshalSnapshot())
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := back.Broker(1); b.Rack != "eu-1a" || back.Hash() != img.Hash() {
		t.Fatalf("after a snapshot: %+v", b)
	}
	again := ev
	again.Rack = "eu-1b"
	if _, err := DecideRegister(img, again); err == nil {
		t.Fatal("the same incarnation registered again with another rack")
	}
	bad := ev
	bad.Incarnation, bad.Rack = 6, "eu 1a"
	if _, err := DecideRegister(img, bad); err == nil || !strings.Contains(err.Error(), "rack") {
		t.Fatalf("bad rack: %v", err)
	}
	if _, _, err := img.ApplyEntry(img.Offset()+1, []Record{BrokerRegistered{ID: 2, Addr: "x:1", Incarnation: 1, Rack: "a/b"}}); err == nil {
		t.Fatal("a record with a bad rack applied")
	}
}

// TestWriteRackFuzzSeeds keeps fuzz seeds of a registration with a rack and
// of an image whose brokers have racks and a rack-aware topic.
func TestWriteRackFuzzSeeds(t *testing.T) {
	img := rackImage(t, []string{"z1", "z2", "z1"})
	recs, err := DecideCreateTopic(img, CreateTopicEvent{Name: "t", ID: "tid", Partitions: 3, RF: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	img = mustApply(t, img, recs)
	entry, err := EncodeEntry(BrokerRegistered{ID: 4, Addr: "127.0.0.1:7104", Incarnation: 1, MetadataVersion: MetadataVersion, Rack: "z2"})
	if err != nil {
		t.Fatal(err)
	}
	checkSeedFiles(t, "seed-rack", entry, "seed-image-racks", img.MarshalSnapshot())
}
