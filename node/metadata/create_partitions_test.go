package metadata

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"paymentlog/node/metadata/scripttest"
)

// execPartitions runs the scenario commands of adding partitions (see
// TestScenarios).
func (s *scenario) execPartitions(t *testing.T, c scripttest.Cmd) string {
	switch c.Name {
	case "add-partitions":
		return s.apply(DecideCreatePartitions(s.img, CreatePartitionsEvent{Name: c.Args["name"],
			Count: int32(c.Int(t, "count", 0)), Seed: uint64(c.Int(t, "seed", 0))}))
	case "reapply":
		next, d, err := s.img.ApplyEntry(s.img.Offset()+1, s.last)
		if err == nil {
			s.img = next
			return fmt.Sprintf("applied (%d partitions changed)", len(d.Partitions))
		}
		if !d.Empty() || next.Hash() != s.img.Hash() {
			t.Fatalf("rejected entry changed the image: %v", d)
		}
		s.img = next
		return fmt.Sprintf("rejected: %v", err)
	}
	t.Fatalf("line %d: unknown command %q", c.Line, c.Name)
	return ""
}

// TestCreatePartitionsContinuesTheTopicsPlacement: with the brokers the
// topic was created on, adding partitions (in one step or several) ends
// with the placement a creation with the final count would have made, for
// any broker count, replication factor and seed; the existing partitions
// and the topic id do not change, and the new ones have a leader and a full
// ISR.
func TestCreatePartitionsContinuesTheTopicsPlacement(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 500 {
		nb := 1 + rng.IntN(7)
		rf := 1 + rng.IntN(nb)
		n1 := 1 + rng.IntN(12)
		steps := 1 + rng.IntN(3)
		seed := rng.Uint64()
		img := upImage(t, nb)
		recs, err := DecideCreateTopic(img, CreateTopicEvent{Name: "t", ID: "tid", Partitions: int32(n1), RF: int32(rf), Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		img = mustApply(t, img, recs)
		before, _ := img.Topic("t")
		n := n1
		for range steps {
			n += 1 + rng.IntN(10)
			recs, err := DecideCreatePartitions(img, CreatePartitionsEvent{Name: "t", Count: int32(n), Seed: rng.Uint64()})
			if err != nil {
				t.Fatalf("iter %d: add to %d: %v", iter, n, err)
			}
			img = mustApply(t, img, recs)
		}
		after, _ := img.Topic("t")
		if after.ID != "tid" || len(after.Partitions) != n {
			t.Fatalf("iter %d: topic id %s, %d partitions; want tid, %d", iter, after.ID, len(after.Partitions), n)
		}
		for i, p := range before.Partitions {
			if !p.Equal(after.Partitions[i]) {
				t.Fatalf("iter %d: existing partition changed: %s -> %s", iter, p, after.Partitions[i])
			}
		}
		var live []int32
		for id := int32(1); id <= int32(nb); id++ {
			live = append(live, id)
		}
		want := AssignReplicas(live, n, rf, seed)
		for i, p := range after.Partitions {
			if !slices.Equal(p.Replicas, want[i]) {
				t.Fatalf("iter %d (brokers %d rf %d, %d then %d partitions): partition %d replicas %v, a creation with %d places %v",
					iter, nb, rf, n1, n, i, p.Replicas, n, want[i])
			}
			if p.Leader != p.Replicas[0] || !slices.Equal(p.ISR, p.Replicas) || p.TopicID != "tid" {
				t.Fatalf("iter %d: new partition %s", iter, p)
			}
		}
	}
}

// TestCreatePartitionsOverChangedBrokersSpreads: when the brokers are no
// longer those the topic was placed on (one fenced, one added), the new
// partitions still go to live brokers only, distinct within a partition,
// and their preferred leaders rotate over every live broker.
func TestCreatePartitionsOverChangedBrokersSpreads(t *testing.T) {
	img := upImage(t, 3)
	recs, err := DecideCreateTopic(img, CreateTopicEvent{Name: "t", ID: "tid", Partitions: 2, RF: 2, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	img = mustApply(t, img, recs)
	p0, _ := img.Partition("t", 0)
	img = mustApply(t, img, DecideFence(img, p0.Replicas[0], 1))
	img = mustApply(t, img, []Record{BrokerRegistered{ID: 4, Addr: "127.0.0.1:7104", Incarnation: 1}})
	img = mustApply(t, img, []Record{BrokerUnfenced{ID: 4, Incarnation: 1}})
	recs, err = DecideCreatePartitions(img, CreatePartitionsEvent{Name: "t", Count: 8, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	img = mustApply(t, img, recs)
	leaders := map[int32]int{}
	for _, r := range recs {
		pc := r.(PartitionCreated)
		for _, id := range pc.Replicas {
			if !img.Live(id) {
				t.Fatalf("%s: replica %d is not live", FormatRecord(pc), id)
			}
		}
		leaders[pc.Leader]++
	}
	if len(leaders) != 3 {
		t.Fatalf("6 new partitions over 3 live brokers led by %v", leaders)
	}
	for id, n := range leaders {
		if n != 2 {
			t.Fatalf("6 new partitions over 3 live brokers: broker %d leads %d (%v)", id, n, leaders)
		}
	}
}

// TestCreatePartitionsSurvivesSnapshot: an image whose topic gained
// partitions round-trips through a snapshot unchanged (same hash, same
// partitions, same topic id).
func TestCreatePartitionsSurvivesSnapshot(t *testing.T) {
	img := upImage(t, 3)
	recs, _ := DecideCreateTopic(img, CreateTopicEvent{Name: "t", ID: "tid", Partitions: 2, RF: 3, Seed: 1})
	img = mustApply(t, img, recs)
	recs, err := DecideCreatePartitions(img, CreatePartitionsEvent{Name: "t", Count: 5})
	if err != nil {
		t.Fatal(err)
	}
	img = mustApply(t, img, recs)
	back, err := UnmarshalSnapshot(0, img.MarshalSnapshot())
	if err != nil {
		t.Fatal(err)
	}
	if back.Hash() != img.Hash() || back.String() != img.String() {
		t.Fatalf("snapshot changed the image:\n%s\nwant\n%s", back, img)
	}
	if tp, _ := back.Topic("t"); len(tp.Partitions) != 5 || tp.ID != "tid" || back.PartitionCount() != 5 {
		t.Fatalf("after snapshot: %d partitions, id %s, count %d", len(tp.Partitions), tp.ID, back.PartitionCount())
	}
	// The next addition decides on the restored image as on the original.
	a, errA := DecideCreatePartitions(img, CreatePartitionsEvent{Name: "t", Count: 7, Seed: 9})
	b, errB := DecideCreatePartitions(back, CreatePartitionsEvent{Name: "t", Count: 7, Seed: 9})
	if errA != nil || errB != nil || fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("decisions differ after a snapshot: %v %v / %v %v", a, errA, b, errB)
	}
}

// upImage is an image with brokers 1..n registered and unfenced (incarnation 1).
func upImage(t *testing.T, n int) *Image {
	t.Helper()
	img := EmptyImage()
	for id := int32(1); id <= int32(n); id++ {
		img = mustApply(t, img, []Record{BrokerRegistered{ID: id, Addr: fmt.Sprintf("127.0.0.1:71%02d", id), Incarnation: 1, MetadataVersion: MetadataVersion}})
		img = mustApply(t, img, []Record{BrokerUnfenced{ID: id, Incarnation: 1}})
	}
	return img
}

// mustApply applies recs as the next entry, through the codec.
func mustApply(t *testing.T, img *Image, recs []Record) *Image {
	t.Helper()
	data, err := EncodeEntry(recs...)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := DecodeEntry(data)
	if err != nil {
		t.Fatal(err)
	}
	next, _, err := img.ApplyEntry(img.Offset()+1, dec)
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, next)
	return next
}

// addPartitionsSeeds are the fuzz seeds of a grown topic: an entry adding
// partitions 3 and 4 to seededImage's payments (it applies there, so the
// fuzzer mutates an entry that gets past the checks), and the snapshot of
// the image after it.
func addPartitionsSeeds(tb testing.TB) (entry, snapshot []byte) {
	tb.Helper()
	img := seededImage(tb)
	recs, err := DecideCreatePartitions(img, CreatePartitionsEvent{Name: "payments", Count: 5, Seed: 3})
	if err != nil {
		tb.Fatal(err)
	}
	entry, err = EncodeEntry(recs...)
	if err != nil {
		tb.Fatal(err)
	}
	next, _, err := img.ApplyEntry(img.Offset()+1, recs)
	if err != nil {
		tb.Fatal(err)
	}
	return entry, next.MarshalSnapshot()
}

// TestWriteCreatePartitionsFuzzSeeds keeps the grown-topic seeds of
// FuzzDecodeEntry and FuzzUnmarshalSnapshot in sync (run with -rewrite).
func TestWriteCreatePartitionsFuzzSeeds(t *testing.T) {
	entry, snap := addPartitionsSeeds(t)
	checkSeedFiles(t, "seed-add-partitions", entry, "seed-image-grown-topic", snap)
}

// checkSeedFiles compares an entry seed of FuzzDecodeEntry and a snapshot
// seed of FuzzUnmarshalSnapshot with the committed files, or with -rewrite
// writes them.
func checkSeedFiles(t *testing.T, entryName string, entry []byte, snapName string, snap []byte) {
	t.Helper()
	for _, s := range []struct {
		fuzz, name string
		b          []byte
	}{{"FuzzDecodeEntry", entryName, entry}, {"FuzzUnmarshalSnapshot", snapName, snap}} {
		path := filepath.Join("testdata", "fuzz", s.fuzz, s.name)
		content := "go test fuzz v1\n[]byte(" + quoteBytes(s.b) + ")\n"
		if scripttest.Rewrite() {
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Errorf("%s is missing or stale (run the test with -rewrite): %v", path, err)
		}
	}
}
