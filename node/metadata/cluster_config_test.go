package metadata

import (
	"reflect"
	"testing"
	"time"

	"paymentlog/wire"
)

// Setting, changing and deleting the reassignment throttle: one record per
// change, none for a change that changes nothing, a delta that says so,
// and the value in the image and its snapshot.
func TestClusterConfigs(t *testing.T) {
	img := upImage(t, 1)
	if _, ok := img.ReassignmentThrottle(); ok {
		t.Fatal("a fresh cluster has a throttle")
	}
	set := AlterClusterConfigsEvent{Set: map[string]string{ConfigReassignmentThrottle: "1048576"}}
	recs, err := DecideAlterClusterConfigs(img, set)
	if err != nil || len(recs) != 1 || FormatRecord(recs[0]) != "ClusterConfigChanged reassignment.throttle.bytes=1048576" {
		t.Fatalf("%v %v", recs, err)
	}
	next, d, err := img.ApplyEntry(img.Offset()+1, recs)
	if err != nil || !d.ClusterConfigsChanged || d.Empty() {
		t.Fatalf("delta %+v, %v", d, err)
	}
	if n, ok := next.ReassignmentThrottle(); !ok || n != 1<<20 {
		t.Fatalf("throttle %d %v", n, ok)
	}
	again, err := UnmarshalSnapshot(0, next.MarshalSnapshot())
	if err != nil || !reflect.DeepEqual(again, next) || again.Hash() != next.Hash() {
		t.Fatalf("snapshot round trip: %v", err)
	}
	if recs, err := DecideAlterClusterConfigs(next, set); err != nil || recs != nil {
		t.Fatalf("the same value again: %v %v", recs, err)
	}
	del := AlterClusterConfigsEvent{Delete: []string{ConfigReassignmentThrottle}}
	next = mustApply(t, next, mustDecide(t)(DecideAlterClusterConfigs(next, del)))
	if _, ok := next.ReassignmentThrottle(); ok || next.ClusterConfigs() != nil {
		t.Fatalf("deleted: %v", next.ClusterConfigs())
	}
	io := AlterClusterConfigsEvent{Set: map[string]string{ConfigLogCleanerIOMax: "16777216"}}
	next = mustApply(t, next, mustDecide(t)(DecideAlterClusterConfigs(next, io)))
	if n, ok := next.LogCleanerIOMax(); !ok || n != 16<<20 {
		t.Fatalf("cleaner throttle %d %v", n, ok)
	}
	next = mustApply(t, next, mustDecide(t)(DecideAlterClusterConfigs(next, AlterClusterConfigsEvent{Delete: []string{ConfigLogCleanerIOMax}})))
	threads := AlterClusterConfigsEvent{Set: map[string]string{ConfigLogCleanerThreads: "4"}}
	next = mustApply(t, next, mustDecide(t)(DecideAlterClusterConfigs(next, threads)))
	if n, ok := next.LogCleanerThreads(); !ok || n != 4 {
		t.Fatalf("cleaner threads %d %v", n, ok)
	}
	next = mustApply(t, next, mustDecide(t)(DecideAlterClusterConfigs(next, AlterClusterConfigsEvent{Delete: []string{ConfigLogCleanerThreads}})))
	if _, ok := next.LogCleanerThreads(); ok {
		t.Fatal("cleaner threads still set once deleted")
	}
	if _, ok := next.LogScrubQuarantineRetention(); ok {
		t.Fatal("quarantine retention set before it was")
	}
	qr := AlterClusterConfigsEvent{Set: map[string]string{ConfigLogScrubQuarantineRetention: "3600000"}}
	next = mustApply(t, next, mustDecide(t)(DecideAlterClusterConfigs(next, qr)))
	if d, ok := next.LogScrubQuarantineRetention(); !ok || d != time.Hour {
		t.Fatalf("quarantine retention %v %v", d, ok)
	}
	next = mustApply(t, next, mustDecide(t)(DecideAlterClusterConfigs(next, AlterClusterConfigsEvent{Delete: []string{ConfigLogScrubQuarantineRetention}})))
	if next.Version() != 2 || img.Version() != 1 {
		t.Fatalf("metadata version %d after a cluster config change (%d before), want 2 (1)", next.Version(), img.Version())
	}
	if recs, err := DecideAlterClusterConfigs(next, del); err != nil || recs != nil {
		t.Fatalf("deleting what is not set: %v %v", recs, err)
	}
	for _, c := range []struct {
		ev   AlterClusterConfigsEvent
		code wire.ErrorCode
		msg  string
	}{
		{AlterClusterConfigsEvent{}, wire.InvalidRequest, "no cluster config to set or delete"},
		{AlterClusterConfigsEvent{Set: map[string]string{"retention.ms": "1"}}, wire.InvalidConfig, `unknown cluster config "retention.ms"`},
		{AlterClusterConfigsEvent{Set: map[string]string{ConfigReassignmentThrottle: "-1"}}, wire.InvalidConfig, "want bytes per second"},
		{AlterClusterConfigsEvent{Set: map[string]string{ConfigLogCleanerIOMax: "1.5e6"}}, wire.InvalidConfig, "want bytes per second"},
		{AlterClusterConfigsEvent{Set: map[string]string{ConfigLogCleanerThreads: "0"}}, wire.InvalidConfig, "want a thread count, an integer >= 1"},
		{AlterClusterConfigsEvent{Set: map[string]string{ConfigLogCleanerThreads: "-2"}}, wire.InvalidConfig, "want a thread count"},
		{AlterClusterConfigsEvent{Set: map[string]string{ConfigLogCleanerThreads: "two"}}, wire.InvalidConfig, "want a thread count"},
		{AlterClusterConfigsEvent{Set: map[string]string{ConfigLogCleanerThreads: "4294967296"}}, wire.InvalidConfig, "want a thread count"},
		{AlterClusterConfigsEvent{Set: map[string]string{ConfigLogScrubQuarantineRetention: "-1"}}, wire.InvalidConfig, "want milliseconds"},
		{AlterClusterConfigsEvent{Set: map[string]string{ConfigLogScrubQuarantineRetention: "168h"}}, wire.InvalidConfig, "want milliseconds"},
		{AlterClusterConfigsEvent{Set: map[string]string{ConfigLogScrubQuarantineRetention: "9223372036854775807"}}, wire.InvalidConfig, "want milliseconds"},
		{AlterClusterConfigsEvent{Set: map[string]string{ConfigReassignmentThrottle: "1"}, Delete: []string{ConfigReassignmentThrottle}}, wire.InvalidConfig, "both set and deleted"},
	} {
		_, err := DecideAlterClusterConfigs(img, c.ev)
		wantCode(t, err, c.code, c.msg)
	}
	// Records from a newer version may carry unknown keys; bad values of
	// known ones are rejected.
	if _, _, err := img.ApplyEntry(img.Offset()+1, []Record{ClusterConfigChanged{Set: map[string]string{"future.key": "x"}}}); err != nil {
		t.Fatalf("unknown key in a record: %v", err)
	}
	if _, _, err := img.ApplyEntry(img.Offset()+1, []Record{ClusterConfigChanged{Set: map[string]string{ConfigReassignmentThrottle: "fast"}}}); err == nil {
		t.Fatal("applied a bad throttle")
	}
}

func mustDecide(t *testing.T) func([]Record, error) []Record {
	return func(recs []Record, err error) []Record {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return recs
	}
}

// TestWriteClusterConfigFuzzSeeds keeps the fuzz seeds of a cluster config
// change in sync (run with -rewrite).
func TestWriteClusterConfigFuzzSeeds(t *testing.T) {
	img := seededImage(t)
	recs := []Record{ClusterConfigChanged{Set: map[string]string{ConfigReassignmentThrottle: "10485760"}, Delete: []string{"old.key"}}}
	entry, err := EncodeEntry(recs...)
	if err != nil {
		t.Fatal(err)
	}
	checkSeedFiles(t, "seed-cluster-config", entry, "seed-image-cluster-config", mustApply(t, img, recs).MarshalSnapshot())
}
