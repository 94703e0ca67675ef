package metadata

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"paymentlog/node/metadata/scripttest"
	"paymentlog/wire"
)

// alterConfigsEvent reads a scenario's "configs topic=T set=k=v,k=v del=k,k".
func alterConfigsEvent(c scripttest.Cmd) AlterConfigsEvent {
	ev := AlterConfigsEvent{Topic: c.Args["topic"]}
	if s := c.Args["set"]; s != "" {
		ev.Set = map[string]string{}
		for _, kv := range strings.Split(s, ",") {
			k, v, _ := strings.Cut(kv, "=")
			ev.Set[k] = v
		}
	}
	if s := c.Args["del"]; s != "" {
		ev.Delete = strings.Split(s, ",")
	}
	return ev
}

// formatTopic renders a topic's min ISR and configs for scenarios.
func formatTopic(img *Image, name string) string {
	t, ok := img.Topic(name)
	if !ok {
		return "no topic " + name
	}
	s := fmt.Sprintf("%s rf=%d min_isr=%d", t.Name, t.RF, t.MinISR)
	for _, k := range slices.Sorted(maps.Keys(t.Configs)) {
		s += fmt.Sprintf(" %s=%s", k, t.Configs[k])
	}
	return s
}

func wantCode(t *testing.T, err error, code wire.ErrorCode, msg string) {
	t.Helper()
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != code || !strings.Contains(we.Message, msg) {
		t.Fatalf("error %v, want %v containing %q", err, code, msg)
	}
}

// Unknown keys are refused by name on creation and on alteration, with
// InvalidConfig; the known keys and min.insync.replicas pass.
func TestUnknownConfigRefused(t *testing.T) {
	img := seededImage(t)
	_, err := DecideCreateTopic(img, CreateTopicEvent{Name: "n", ID: "n1", Partitions: 1, RF: 1,
		Configs: map[string]string{ConfigRetentionMs: "1", "foo": "bar"}})
	wantCode(t, err, wire.InvalidConfig, "Unknown topic config name: foo")
	_, err = DecideAlterConfigs(img, AlterConfigsEvent{Topic: "payments", Set: map[string]string{"foo": "bar"}})
	wantCode(t, err, wire.InvalidConfig, "Unknown topic config name: foo")
	_, err = DecideAlterConfigs(img, AlterConfigsEvent{Topic: "payments", Delete: []string{"cleanup.policy"}})
	wantCode(t, err, wire.InvalidConfig, "Unknown topic config name: cleanup.policy")
	_, err = DecideAlterConfigs(img, AlterConfigsEvent{Topic: "payments", Set: map[string]string{ConfigRetentionMs: "x"}})
	wantCode(t, err, wire.InvalidConfig, "retention.ms")
	_, err = DecideAlterConfigs(img, AlterConfigsEvent{Topic: "nosuch", Set: map[string]string{ConfigRetentionMs: "1"}})
	wantCode(t, err, wire.UnknownTopicOrPartition, "nosuch")

	recs, err := DecideCreateTopic(img, CreateTopicEvent{Name: "n", ID: "n1", Partitions: 1, RF: 3,
		Configs: map[string]string{ConfigMinInsyncReplicas: "3", ConfigRetentionBytes: "-1"}})
	if err != nil {
		t.Fatal(err)
	}
	tc := recs[0].(TopicCreated)
	if tc.MinISR != 3 || len(tc.Configs) != 1 {
		t.Fatalf("min.insync.replicas in create: %s", FormatRecord(tc))
	}
	_, err = DecideCreateTopic(img, CreateTopicEvent{Name: "n", ID: "n1", Partitions: 1, RF: 3, MinISR: 2,
		Configs: map[string]string{ConfigMinInsyncReplicas: "3"}})
	wantCode(t, err, wire.InvalidConfig, "contradicts")
}

// Records and snapshots written before unknown keys were refused still
// apply and load: the key is kept, and may be deleted.
func TestUnknownConfigInOldLogStillApplies(t *testing.T) {
	img := seededImage(t)
	old := []Record{
		TopicCreated{Name: "old", ID: "o1", Partitions: 1, RF: 1, MinISR: 1, Configs: map[string]string{"foo": "bar"}},
		PartitionCreated{Topic: "old", TopicID: "o1", Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1},
	}
	data, _ := EncodeEntry(old...)
	recs, err := DecodeEntry(data)
	if err != nil {
		t.Fatal(err)
	}
	img, _, err = img.ApplyEntry(img.Offset()+1, recs)
	if err != nil {
		t.Fatalf("old entry with an unknown key: %v", err)
	}
	back, err := UnmarshalSnapshot(0, img.MarshalSnapshot())
	if err != nil {
		t.Fatalf("snapshot with an unknown key: %v", err)
	}
	if tp, _ := back.Topic("old"); tp.Configs["foo"] != "bar" {
		t.Fatalf("unknown key lost: %v", tp.Configs)
	}
	// Deleting a held unknown key is allowed; setting one is not.
	recs, err = DecideAlterConfigs(img, AlterConfigsEvent{Topic: "old", Delete: []string{"foo"}})
	if err != nil {
		t.Fatal(err)
	}
	img, _, err = img.ApplyEntry(img.Offset()+1, recs)
	if err != nil {
		t.Fatal(err)
	}
	if tp, _ := img.Topic("old"); tp.Configs != nil {
		t.Fatalf("configs after deleting foo: %v", tp.Configs)
	}
}

// A change carries through the log, the image, the delta and a snapshot;
// a repeat changes nothing; segment.bytes cannot change; min ISR stays
// within [1, RF].
func TestAlterConfigsApply(t *testing.T) {
	img := seededImage(t)
	step := func(ev AlterConfigsEvent) (Delta, []Record) {
		t.Helper()
		recs, err := DecideAlterConfigs(img, ev)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := EncodeEntry(recs...)
		dec, err := DecodeEntry(data)
		if err != nil {
			t.Fatal(err)
		}
		next, d, err := img.ApplyEntry(img.Offset()+1, dec)
		if err != nil {
			t.Fatal(err)
		}
		img = next
		return d, recs
	}
	d, recs := step(AlterConfigsEvent{Topic: "payments", Set: map[string]string{ConfigRetentionBytes: "100",
		ConfigMinInsyncReplicas: "3"}, Delete: []string{ConfigRetentionMs}})
	if len(recs) != 1 || !slices.Equal(d.TopicsConfigChanged, []TopicRef{{"payments", "p1"}}) {
		t.Fatalf("records %v delta %+v", recs, d)
	}
	tp, _ := img.Topic("payments")
	if tp.MinISR != 3 || !maps.Equal(tp.Configs, map[string]string{ConfigRetentionBytes: "100"}) {
		t.Fatalf("after change: %s", formatTopic(img, "payments"))
	}
	if tm := tp.TopicMetadata(); tm.MinISR != 3 || tm.Configs[ConfigRetentionBytes] != "100" {
		t.Fatalf("metadata: %+v", tm)
	}
	back, err := UnmarshalSnapshot(0, img.MarshalSnapshot())
	if err != nil || back.Hash() != img.Hash() {
		t.Fatalf("snapshot: %v", err)
	}
	if dd := Diff(seededImage(t), img); !slices.Equal(dd.TopicsConfigChanged, []TopicRef{{"payments", "p1"}}) {
		t.Fatalf("diff: %+v", dd.TopicsConfigChanged)
	}
	// The same change again: nothing to do.
	if recs, err := DecideAlterConfigs(img, AlterConfigsEvent{Topic: "payments",
		Set: map[string]string{ConfigRetentionBytes: "100", ConfigMinInsyncReplicas: "3"}}); err != nil || recs != nil {
		t.Fatalf("repeat: %v %v", recs, err)
	}
	// Deleting min.insync.replicas restores the default min(2, RF).
	step(AlterConfigsEvent{Topic: "payments", Delete: []string{ConfigMinInsyncReplicas}})
	if tp, _ := img.Topic("payments"); tp.MinISR != 2 {
		t.Fatalf("min ISR after delete: %d", tp.MinISR)
	}
	_, err = DecideAlterConfigs(img, AlterConfigsEvent{Topic: "payments", Set: map[string]string{ConfigMinInsyncReplicas: "4"}})
	wantCode(t, err, wire.InvalidConfig, "exceeds the replication factor 3")
	_, err = DecideAlterConfigs(img, AlterConfigsEvent{Topic: "payments", Set: map[string]string{ConfigMinInsyncReplicas: "0"}})
	wantCode(t, err, wire.InvalidConfig, "min.insync.replicas")
	_, err = DecideAlterConfigs(img, AlterConfigsEvent{Topic: "payments", Set: map[string]string{ConfigSegmentBytes: "2097152"}})
	wantCode(t, err, wire.InvalidConfig, "segment.bytes cannot be changed")
	_, err = DecideAlterConfigs(img, AlterConfigsEvent{Topic: "payments", Set: map[string]string{ConfigRetentionMs: "1"},
		Delete: []string{ConfigRetentionMs}})
	wantCode(t, err, wire.InvalidConfig, "both set and deleted")
	_, err = DecideAlterConfigs(img, AlterConfigsEvent{Topic: "payments"})
	wantCode(t, err, wire.InvalidRequest, "no config")
}

// A TopicConfigChanged decided on a stale image is rejected whole, like
// every conditional record: another incarnation of the topic, a min ISR
// above the RF (the topic was re-created with a smaller one), a bad value.
func TestTopicConfigChangedRejected(t *testing.T) {
	img := seededImage(t)
	for _, r := range []TopicConfigChanged{
		{Name: "payments", ID: "other", Set: map[string]string{ConfigRetentionMs: "1"}},
		{Name: "nosuch", ID: "p1", Set: map[string]string{ConfigRetentionMs: "1"}},
		{Name: "audit", ID: "a1", MinISR: 3},
		{Name: "audit", ID: "a1", MinISR: -1},
		{Name: "payments", ID: "p1", Set: map[string]string{ConfigRetentionMs: "x"}},
		{Name: "payments", ID: "p1", Set: map[string]string{ConfigRetentionMs: "1"}, Delete: []string{ConfigRetentionMs}},
	} {
		next, d, err := img.Apply(img.Offset()+1, r)
		if !errors.Is(err, ErrRejected) || !d.Empty() || next.Hash() != img.Hash() {
			t.Errorf("%s: err %v, delta %+v", FormatRecord(r), err, d)
		}
	}
}

// Turning unclean election on for a topic with an offline partition elects
// a live replica outside the ISR in the same entry; a topic that keeps it
// off, or a partition with no live replica, stays offline.
func TestAlterConfigsUncleanElectsOffline(t *testing.T) {
	img := seededImage(t)
	apply := applier(t, &img)
	// Min ISR 1: the replicas the shrink below drops are not eligible
	// leader replicas (an ELR member would be elected cleanly).
	apply(DecideAlterConfigs(img, AlterConfigsEvent{Topic: "payments", Set: map[string]string{ConfigMinInsyncReplicas: "1"}}))
	// Shrink payments-0's ISR to its leader, then fence that leader.
	p, _ := img.Partition("payments", 0)
	ldr := p.Leader
	b, _ := img.Broker(ldr)
	apply(DecideAlterPartition(img, wire.AlterPartitionRequest{BrokerID: ldr, Incarnation: b.Incarnation, Topic: "payments",
		TopicID: p.TopicID, Partition: 0, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, NewISR: []int32{ldr}}))
	apply(DecideFence(img, ldr, b.Incarnation), nil)
	if p, _ := img.Partition("payments", 0); p.Leader != NoLeader {
		t.Fatalf("not offline: %s", p)
	}
	// Another config change does not elect.
	recs, err := DecideAlterConfigs(img, AlterConfigsEvent{Topic: "payments", Set: map[string]string{ConfigRetentionMs: "5"}})
	if err != nil || len(recs) != 1 {
		t.Fatalf("retention change: %v %v", recs, err)
	}
	apply(recs, err)
	recs, err = DecideAlterConfigs(img, AlterConfigsEvent{Topic: "payments", Set: map[string]string{ConfigUncleanLeaderElection: "true"}})
	apply(recs, err)
	p, _ = img.Partition("payments", 0)
	if p.Leader == NoLeader || p.Leader == ldr || !slices.Equal(p.ISR, []int32{p.Leader}) || !img.Live(p.Leader) {
		t.Fatalf("after unclean on: %s (records %v)", p, recs)
	}
	checkInvariants(t, img)
}

// randomConfigChange draws a config change of a random topic (or of a
// missing one): known keys with good and bad values, deletes, and now and
// then an unknown key or segment.bytes.
func randomConfigChange(rng *rand.Rand, img *Image) AlterConfigsEvent {
	names := img.TopicNames()
	ev := AlterConfigsEvent{Topic: "missing"}
	if len(names) > 0 {
		ev.Topic = names[rng.IntN(len(names))]
	}
	keys := []string{ConfigUncleanLeaderElection, ConfigRetentionMs, ConfigRetentionBytes, ConfigMinInsyncReplicas}
	values := map[string][]string{
		ConfigUncleanLeaderElection: {"true", "false", "yes"},
		ConfigRetentionMs:           {"-1", "1000", "-2"},
		ConfigRetentionBytes:        {"-1", "1048576", "x"},
		ConfigMinInsyncReplicas:     {"1", "2", "3", "0"},
	}
	for _, k := range keys {
		switch rng.IntN(4) {
		case 0:
			if ev.Set == nil {
				ev.Set = map[string]string{}
			}
			vs := values[k]
			ev.Set[k] = vs[rng.IntN(len(vs))]
		case 1:
			ev.Delete = append(ev.Delete, k)
		}
	}
	switch rng.IntN(10) {
	case 0:
		ev.Delete = append(ev.Delete, "foo")
	case 1:
		if ev.Set == nil {
			ev.Set = map[string]string{}
		}
		ev.Set[ConfigSegmentBytes] = "1048576"
	}
	return ev
}

// A malformed key from the network is named quoted and cut short.
func TestMalformedConfigKeyRefused(t *testing.T) {
	img := seededImage(t)
	long := strings.Repeat("A", 5000)
	for _, ev := range []AlterConfigsEvent{
		{Topic: "payments", Set: map[string]string{long: "1"}},
		{Topic: "payments", Delete: []string{long}},
		{Topic: "payments", Set: map[string]string{"a\nb": "1"}},
	} {
		_, err := DecideAlterConfigs(img, ev)
		var we *wire.Error
		if !errors.As(err, &we) || we.Code != wire.InvalidConfig || len(we.Message) > 300 || strings.Contains(we.Message, "\n") {
			t.Errorf("%+v: %v", ev, err)
		}
	}
}
