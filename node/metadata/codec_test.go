package metadata

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"paymentlog/node/metadata/scripttest"
	"paymentlog/wire"
)

func allRecords() []Record {
	return []Record{
		ControllerMarker{ControllerID: 2, Term: 7},
		BrokerRegistered{ID: 1, Addr: "127.0.0.1:7101", Incarnation: -5, ControllerEligible: true},
		BrokerFenced{ID: 1, Incarnation: 3},
		BrokerUnfenced{ID: 1, Incarnation: 3},
		BrokerControlledShutdown{ID: 1, Incarnation: 3},
		TopicCreated{Name: "payments", ID: "abc", Partitions: 3, RF: 3, MinISR: 2,
			Configs: map[string]string{ConfigUncleanLeaderElection: "false", ConfigRetentionMs: "1000"}},
		PartitionCreated{Topic: "payments", TopicID: "abc", Partition: 0, Replicas: []int32{1, 2, 3},
			ISR: []int32{1, 2, 3}, Leader: 1},
		PartitionChange{Topic: "payments", TopicID: "abc", Partition: 0, Replicas: []int32{1, 2, 3},
			ISR: []int32{2, 3}, Leader: 2, LeaderEpoch: 1, PartitionEpoch: 1},
		TopicDeleted{Name: "payments", ID: "abc"},
		ProducerIDBlock{Broker: 1, Start: 1000, Len: 1000},
		TopicConfigChanged{Name: "payments", ID: "abc", Set: map[string]string{ConfigRetentionMs: "5"},
			Delete: []string{ConfigUncleanLeaderElection}, MinISR: 3},
		ACLsCreated{ACLs: []wire.ACLBinding{{Principal: "User:billing", ResourceType: wire.ResourceTopic,
			PatternType: wire.PatternPrefixed, Name: "pay", Operation: wire.OpWrite, Permission: wire.PermissionAllow}}},
		ACLsDeleted{ACLs: []wire.ACLBinding{{Principal: wire.WildcardPrincipal, ResourceType: wire.ResourceGroup,
			PatternType: wire.PatternLiteral, Name: wire.WildcardResource, Operation: wire.OpAll, Permission: wire.PermissionDeny}}},
		ClientQuotasChanged{Entries: []wire.QuotaEntry{
			{Principal: "", Set: map[string]int64{wire.QuotaConsumerByteRate: 1 << 20}},
			{Principal: "User:billing", Set: map[string]int64{wire.QuotaProducerByteRate: 4 << 20}, Delete: []string{wire.QuotaConsumerByteRate}}}},
	}
}

func TestEntryRoundTrip(t *testing.T) {
	recs := allRecords()
	data, err := EncodeEntry(recs...)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeEntry(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, recs) {
		t.Fatalf("round trip:\n got %#v\nwant %#v", got, recs)
	}
	for _, r := range recs {
		if name := r.Type().String(); name == "" || name[0] == 'R' {
			t.Errorf("type %d has no name", r.Type())
		}
	}
	if got, err := DecodeEntry(nil); err != nil || len(got) != 0 {
		t.Fatalf("empty entry: %v %v", got, err)
	}
}

func TestDecodeEntryErrors(t *testing.T) {
	good, _ := EncodeEntry(BrokerFenced{ID: 1, Incarnation: 2})
	body := good[recordHeaderLen:]
	hdr := func(typ, ver byte, n uint32) []byte {
		h := []byte{typ, ver, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(h[2:], n)
		return h
	}
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"short header", good[:3], ErrCorruptRecord},
		{"length past end", append(hdr(3, 1, 1000), body...), ErrCorruptRecord},
		{"unknown type", append(hdr(99, 1, uint32(len(body))), body...), ErrUnknownRecord},
		{"unknown version", append(hdr(3, 9, uint32(len(body))), body...), ErrUnknownRecord},
		{"trailing bytes in body", append(hdr(3, 1, uint32(len(body)+1)), append(append([]byte{}, body...), 0xc0)...), ErrCorruptRecord},
		{"wrong body type", append(hdr(3, 1, 1), 0xa0), ErrCorruptRecord},
		// #401: an array32 header claiming 4 billion elements in 5 bytes.
		{"huge array claim", append(hdr(7, 1, 5), 0xdd, 0xff, 0xff, 0xff, 0xff), ErrCorruptRecord},
		{"garbage after record", append(append([]byte{}, good...), 1), ErrCorruptRecord},
	}
	for _, c := range cases {
		_, err := DecodeEntry(c.data)
		var de *DecodeError
		if !errors.Is(err, c.want) || !errors.As(err, &de) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
}

func TestCheckMsgpack(t *testing.T) {
	ok := []any{nil, true, 1, -1, 1 << 40, 1.5, "x", []byte("abc"), []int{1, 2, 3},
		map[string]any{"a": []any{1, "b", map[string]int{"c": 1}}}, allRecords()}
	for _, v := range ok {
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkMsgpack(b); err != nil {
			t.Errorf("%#v: %v", v, err)
		}
		for i := 0; i < len(b); i++ { // every strict prefix is truncated
			if checkMsgpack(b[:i]) == nil {
				t.Errorf("%#v: prefix %d accepted", v, i)
			}
		}
	}
	bad := [][]byte{
		{0xc1},                         // never-used byte
		{0xdd, 0xff, 0xff, 0xff, 0xff}, // array32 of 4G items
		{0xdf, 0, 0, 0, 2, 1},          // map32 of 2 pairs, 1 byte
		{0xc6, 0xff, 0xff, 0xff, 0xff}, // bin32 past end
		{0xc0, 0xc0},                   // two values
	}
	deep := make([]byte, 0, 100)
	for range 40 {
		deep = append(deep, 0x91)
	}
	bad = append(bad, append(deep, 0xc0))
	for _, b := range bad {
		if checkMsgpack(b) == nil {
			t.Errorf("% x accepted", b)
		}
	}
}

// FuzzDecodeEntry: decoding arbitrary bytes never panics and never allocates
// beyond the input's size; whatever decodes re-encodes and applies safely.
func FuzzDecodeEntry(f *testing.F) {
	for _, r := range allRecords() {
		b, _ := EncodeEntry(r)
		f.Add(b)
	}
	all, _ := EncodeEntry(allRecords()...)
	f.Add(all)
	f.Add([]byte{7, 1, 0, 0, 0, 5, 0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := DecodeEntry(data)
		if err != nil {
			return
		}
		enc, err := EncodeEntry(recs...)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		again, err := DecodeEntry(enc)
		if err != nil || len(again) != len(recs) {
			t.Fatalf("re-decode: %v", err)
		}
		img := seededImage(t)
		next, _, _ := img.ApplyEntry(img.Offset()+1, recs)
		checkStructure(t, next)
	})
}

// FuzzUnmarshalSnapshot: snapshot bytes from disk or a peer never panic, and
// what decodes is a structurally valid image that round-trips.
func FuzzUnmarshalSnapshot(f *testing.F) {
	f.Add(seededImage(f).MarshalSnapshot())
	f.Add(EmptyImage().MarshalSnapshot())
	f.Add([]byte{1, 0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		img, err := UnmarshalSnapshot(0, data)
		if err != nil {
			return
		}
		checkStructure(t, img)
		again, err := UnmarshalSnapshot(0, img.MarshalSnapshot())
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if again.Hash() != img.Hash() {
			t.Fatal("hash changed over a round trip")
		}
	})
}

// checkStructure verifies the invariants Apply and UnmarshalSnapshot enforce.
func checkStructure(t *testing.T, img *Image) {
	t.Helper()
	n := 0
	for _, tp := range img.Topics() {
		for i, p := range tp.Partitions {
			if p.Partition != int32(i) || p.Topic != tp.Name {
				t.Fatalf("misplaced partition %s", p)
			}
			if why := validatePartition(p); why != "" {
				t.Fatalf("%s: %s", p, why)
			}
			n++
		}
	}
	if n != img.PartitionCount() {
		t.Fatalf("partition count %d, counted %d", img.PartitionCount(), n)
	}
}

// TestWriteFuzzSeeds keeps the committed seed corpus in sync with the
// encoders (run with -rewrite to refresh).
func TestWriteFuzzSeeds(t *testing.T) {
	if !scripttest.Rewrite() {
		t.Skip("run with -rewrite to regenerate testdata/fuzz seeds")
	}
	write := func(fuzz, name string, b []byte) {
		dir := filepath.Join("testdata", "fuzz", fuzz)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		content := "go test fuzz v1\n[]byte(" + quoteBytes(b) + ")\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range allRecords() {
		b, _ := EncodeEntry(r)
		write("FuzzDecodeEntry", "seed-"+r.Type().String(), b)
	}
	all, _ := EncodeEntry(allRecords()...)
	write("FuzzDecodeEntry", "seed-all", all)
	write("FuzzDecodeEntry", "seed-huge-array", []byte{7, 1, 0, 0, 0, 5, 0xdd, 0xff, 0xff, 0xff, 0xff})
	write("FuzzUnmarshalSnapshot", "seed-image", seededImage(t).MarshalSnapshot())
	write("FuzzUnmarshalSnapshot", "seed-empty", EmptyImage().MarshalSnapshot())
}

func quoteBytes(b []byte) string {
	const hex = "0123456789abcdef"
	out := []byte{'"'}
	for _, c := range b {
		out = append(out, '\\', 'x', hex[c>>4], hex[c&15])
	}
	return string(append(out, '"'))
}

// seededImage is a small cluster: three live brokers, two topics.
func seededImage(tb testing.TB) *Image {
	tb.Helper()
	img := EmptyImage()
	step := func(recs []Record, err error) {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
		next, _, err := img.ApplyEntry(img.Offset()+1, recs)
		if err != nil {
			tb.Fatal(err)
		}
		img = next
	}
	step([]Record{ControllerMarker{ControllerID: 1, Term: 2}}, nil)
	for id := int32(1); id <= 3; id++ {
		step(DecideRegister(img, RegisterEvent{ID: id, Addr: "127.0.0.1:1", Incarnation: 1, ControllerEligible: id < 3}))
		step(DecideHeartbeat(img, HeartbeatEvent{ID: id, Incarnation: 1, MetadataOffset: int64(img.Offset())}))
	}
	step(DecideCreateTopic(img, CreateTopicEvent{Name: "payments", ID: "p1", Partitions: 3, RF: 3, Seed: 1,
		Configs: map[string]string{ConfigRetentionMs: "60000"}}))
	step(DecideCreateTopic(img, CreateTopicEvent{Name: "audit", ID: "a1", Partitions: 2, RF: 2, Seed: 2,
		Configs: map[string]string{ConfigUncleanLeaderElection: "true"}}))
	step(DecideProducerIDs(img, 2, 1000))
	return img
}
