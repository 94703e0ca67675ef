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
	_, err = DecideAlterConfigs(img, AlterConfigsEvent{Topic: "payments", Delete: []string{"preallocate"}})
	wantCode(t, err, wire.InvalidConfig, "Unknown topic config name: preallocate")
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
	keys := []string{ConfigUncleanLeaderElection, ConfigRetentionMs, ConfigRetentionBytes, ConfigMinInsyncReplicas,
		ConfigCleanupPolicy, ConfigMinCleanableDirtyRatio}
	values := map[string][]string{
		ConfigUncleanLeaderElection:  {"true", "false", "yes"},
		ConfigRetentionMs:            {"-1", "1000", "-2"},
		ConfigRetentionBytes:         {"-1", "1048576", "x"},
		ConfigMinInsyncReplicas:      {"1", "2", "3", "0"},
		ConfigCleanupPolicy:          {"compact", "compact,delete", "delete", "compact, delete"},
		ConfigMinCleanableDirtyRatio: {"0.1", "1", "1.5"},
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

// The compaction configs: every cleanup.policy Kafka spells (and only
// those) and the knobs' ranges are accepted on creation and alteration,
// anything else refused by key with InvalidConfig; TopicState.Compaction
// reads them with the defaults for what is not set, and a deleted key
// returns to its default.
func TestCompactionConfigs(t *testing.T) {
	img := upgradedImage(t, seededImage(t))
	if got, want := (TopicState{}).Compaction(), (Compaction{Delete: true, MinCleanableDirtyRatio: 0.5,
		DeleteRetentionMs: 86400000}); got != want {
		t.Fatalf("defaults: %+v, want %+v", got, want)
	}
	for v, want := range map[string][2]bool{"delete": {false, true}, "compact": {true, false},
		"compact,delete": {true, true}, "delete,compact": {true, true}} {
		recs, err := DecideCreateTopic(img, CreateTopicEvent{Name: "c", ID: "c1", Partitions: 1, RF: 1,
			Configs: map[string]string{ConfigCleanupPolicy: v}})
		if err != nil {
			t.Fatalf("cleanup.policy=%s: %v", v, err)
		}
		next := mustApply(t, img, recs)
		tp, _ := next.Topic("c")
		if c := tp.Compaction(); c.Compact != want[0] || c.Delete != want[1] {
			t.Errorf("cleanup.policy=%s: compact %t delete %t", v, c.Compact, c.Delete)
		}
	}
	for _, bad := range []struct{ key, value string }{
		{ConfigCleanupPolicy, ""}, {ConfigCleanupPolicy, "Compact"}, {ConfigCleanupPolicy, "compact, delete"},
		{ConfigCleanupPolicy, "compact,compact"}, {ConfigCleanupPolicy, "compact,delete,compact"},
		{ConfigCleanupPolicy, "none"}, {ConfigCleanupPolicy, "compact,"},
		{ConfigMinCleanableDirtyRatio, "-0.1"}, {ConfigMinCleanableDirtyRatio, "1.01"},
		{ConfigMinCleanableDirtyRatio, "NaN"}, {ConfigMinCleanableDirtyRatio, "x"}, {ConfigMinCleanableDirtyRatio, ""},
		{ConfigDeleteRetentionMs, "-1"}, {ConfigDeleteRetentionMs, "1.5"}, {ConfigDeleteRetentionMs, ""},
		{ConfigMinCompactionLagMs, "-5"}, {ConfigMinCompactionLagMs, "1e3"},
		{ConfigMaxCompactionLagMs, "0"}, {ConfigMaxCompactionLagMs, "-1"}, {ConfigMaxCompactionLagMs, "1h"},
		{ConfigSegmentMs, "0"}, {ConfigSegmentMs, "-1"}, {ConfigSegmentMs, "1h"}, {ConfigSegmentMs, ""},
	} {
		_, err := DecideCreateTopic(img, CreateTopicEvent{Name: "c", ID: "c1", Partitions: 1, RF: 1,
			Configs: map[string]string{bad.key: bad.value}})
		wantCode(t, err, wire.InvalidConfig, "config "+bad.key+": want ")
		_, err = DecideAlterConfigs(img, AlterConfigsEvent{Topic: "payments", Set: map[string]string{bad.key: bad.value}})
		wantCode(t, err, wire.InvalidConfig, "config "+bad.key+": want ")
	}

	apply := applier(t, &img)
	apply(DecideAlterConfigs(img, AlterConfigsEvent{Topic: "payments", Set: map[string]string{
		ConfigCleanupPolicy: "compact,delete", ConfigMinCleanableDirtyRatio: "0", ConfigDeleteRetentionMs: "0",
		ConfigMinCompactionLagMs: "60000", ConfigMaxCompactionLagMs: "3600000"}}))
	tp, _ := img.Topic("payments")
	if ms, ok := tp.SegmentMs(); ok {
		t.Fatalf("segment.ms %d before it is set", ms)
	}
	apply(DecideAlterConfigs(img, AlterConfigsEvent{Topic: "payments", Set: map[string]string{ConfigSegmentMs: "3600000"}}))
	tp, _ = img.Topic("payments")
	if ms, ok := tp.SegmentMs(); !ok || ms != 3600000 {
		t.Fatalf("segment.ms %d (set %v), want 3600000", ms, ok)
	}
	if got, want := tp.Compaction(), (Compaction{Compact: true, Delete: true, DeleteRetentionMs: 0,
		MinCompactionLagMs: 60000, MaxCompactionLagMs: 3600000}); got != want {
		t.Fatalf("after alter: %+v, want %+v", got, want)
	}
	if tm := tp.TopicMetadata(); tm.Configs[ConfigCleanupPolicy] != "compact,delete" {
		t.Fatalf("metadata configs: %v", tm.Configs)
	}
	back, err := UnmarshalSnapshot(0, img.MarshalSnapshot())
	if err != nil || back.Hash() != img.Hash() {
		t.Fatalf("snapshot: %v", err)
	}
	apply(DecideAlterConfigs(img, AlterConfigsEvent{Topic: "payments", Set: map[string]string{ConfigCleanupPolicy: "compact",
		ConfigMinCleanableDirtyRatio: "1"}}))
	tp, _ = img.Topic("payments")
	if c := tp.Compaction(); !c.Compact || c.Delete || c.MinCleanableDirtyRatio != 1 {
		t.Fatalf("compact alone: %+v", c)
	}
	apply(DecideAlterConfigs(img, AlterConfigsEvent{Topic: "payments", Delete: []string{ConfigCleanupPolicy,
		ConfigMinCleanableDirtyRatio, ConfigDeleteRetentionMs, ConfigMinCompactionLagMs, ConfigMaxCompactionLagMs}}))
	tp, _ = img.Topic("payments")
	if got := tp.Compaction(); got != (TopicState{}).Compaction() {
		t.Fatalf("after deleting every compaction key: %+v", got)
	}
}

// Before compaction was built its keys were unknown, so taken with any
// value when unknown keys were still accepted: such a record (and a
// snapshot holding it) still applies as it did, the value kept and shown,
// and the topic keeps the default behaviour; a request may set a valid
// value over it.
func TestCompactionConfigFromOldLogStillApplies(t *testing.T) {
	img := upgradedImage(t, seededImage(t))
	old := map[string]string{ConfigCleanupPolicy: "compact, delete", ConfigMinCleanableDirtyRatio: "2",
		ConfigDeleteRetentionMs: "-1", ConfigMinCompactionLagMs: "soon"}
	img = mustApply(t, img, []Record{
		TopicCreated{Name: "old", ID: "o1", Partitions: 1, RF: 1, MinISR: 1, Configs: maps.Clone(old)},
		PartitionCreated{Topic: "old", TopicID: "o1", Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1},
	})
	back, err := UnmarshalSnapshot(0, img.MarshalSnapshot())
	if err != nil {
		t.Fatalf("snapshot with old compaction values: %v", err)
	}
	tp, ok := back.Topic("old")
	if !ok || !maps.Equal(tp.Configs, old) {
		t.Fatalf("old topic after a snapshot: %v %v", ok, tp.Configs)
	}
	if got := tp.Compaction(); got != (TopicState{}).Compaction() {
		t.Fatalf("values that do not parse: %+v, want the defaults", got)
	}
	apply := applier(t, &img)
	apply(DecideAlterConfigs(img, AlterConfigsEvent{Topic: "old", Set: map[string]string{ConfigCleanupPolicy: "compact"}}))
	if tp, _ := img.Topic("old"); !tp.Compaction().Compact {
		t.Fatalf("after setting a valid policy: %v", tp.Configs)
	}
}

// Compacted topics need metadata version 7: an older build refuses the
// batches the cleaner rewrites (AttrCompacted) as corrupt. Creating one, or
// turning compaction on, waits for every broker's build; the first such
// record raises the cluster's version, so an old build cannot register
// afterwards.
func TestCompactedTopicsNeedMetadataVersion7(t *testing.T) {
	img := upgradedImage(t, seededImage(t))
	old := mustApply(t, img, []Record{BrokerRegistered{ID: 4, Addr: "127.0.0.1:7104", Incarnation: 1, MetadataVersion: 6}})
	compact := map[string]string{ConfigCleanupPolicy: "compact,delete"}
	_, err := DecideCreateTopic(old, CreateTopicEvent{Name: "c", ID: "c1", Partitions: 1, RF: 1, Configs: compact})
	wantCode(t, err, wire.UnsupportedVersion, "a compacted topic (cleanup.policy=compact) needs metadata version 7, which the builds of brokers [4 (version 6)]")
	_, err = DecideAlterConfigs(old, AlterConfigsEvent{Topic: "payments", Set: compact})
	wantCode(t, err, wire.UnsupportedVersion, "compacting a topic (cleanup.policy=compact) needs metadata version 7")
	// cleanup.policy=delete needs nothing new.
	if _, err := DecideCreateTopic(old, CreateTopicEvent{Name: "d", ID: "d1", Partitions: 1, RF: 1,
		Configs: map[string]string{ConfigCleanupPolicy: "delete"}}); err != nil {
		t.Fatal(err)
	}

	recs, err := DecideCreateTopic(img, CreateTopicEvent{Name: "c", ID: "c1", Partitions: 1, RF: 1, Configs: compact})
	if err != nil {
		t.Fatal(err)
	}
	before := img.Version()
	next := mustApply(t, img, recs)
	if before >= compactionVersion || next.Version() != compactionVersion {
		t.Fatalf("version %d before, %d after creating a compacted topic", before, next.Version())
	}
	recs, err = DecideAlterConfigs(img, AlterConfigsEvent{Topic: "payments", Set: compact})
	if err != nil {
		t.Fatal(err)
	}
	if v := mustApply(t, img, recs).Version(); v != compactionVersion {
		t.Fatalf("version %d after compacting a topic", v)
	}
	_, err = DecideRegister(next, RegisterEvent{ID: 5, Addr: "127.0.0.1:7105", Incarnation: 1, MetadataVersion: 6})
	if err == nil {
		t.Fatal("a version-6 build registered with a cluster using compacted topics")
	}
}

// upgradedImage re-registers every broker of img with this build's
// metadata version (a new incarnation, unfenced).
func upgradedImage(t *testing.T, img *Image) *Image {
	t.Helper()
	step := func(recs []Record, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		img = mustApply(t, img, recs)
	}
	for _, b := range img.Brokers() {
		step(DecideRegister(img, RegisterEvent{ID: b.ID, Addr: b.Addr, Incarnation: b.Incarnation + 1,
			ControllerEligible: b.ControllerEligible, MetadataVersion: MetadataVersion}))
		step(DecideHeartbeat(img, HeartbeatEvent{ID: b.ID, Incarnation: b.Incarnation + 1, MetadataOffset: int64(img.Offset())}))
	}
	return img
}
