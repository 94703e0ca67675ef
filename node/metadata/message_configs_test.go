package metadata

import (
	"testing"

	"paymentlog/wire"
)

// The message configs: accepted on creation and alteration within their
// ranges, refused by key otherwise; TopicState.Messages reads them with
// their defaults, and a value stored before the keys were known (any
// string) acts as the default.
func TestMessageConfigs(t *testing.T) {
	img := upgradedImage(t, seededImage(t))
	if got, want := (TopicState{}).Messages(nil), (Messages{BeforeMaxMs: -1, AfterMaxMs: -1}); got != want {
		t.Fatalf("defaults: %+v, want %+v", got, want)
	}
	for _, bad := range []struct{ key, value string }{
		{ConfigMessageTimestampType, "createtime"}, {ConfigMessageTimestampType, ""}, {ConfigMessageTimestampType, "LogAppend"},
		{ConfigMessageTimestampBeforeMaxMs, "-1"}, {ConfigMessageTimestampBeforeMaxMs, "1h"},
		{ConfigMessageTimestampAfterMaxMs, "-5"}, {ConfigMessageTimestampAfterMaxMs, ""},
		{ConfigMaxMessageBytes, "127"}, {ConfigMaxMessageBytes, "0"}, {ConfigMaxMessageBytes, "2147483648"},
		{ConfigMaxMessageBytes, "1MiB"},
	} {
		_, err := DecideCreateTopic(img, CreateTopicEvent{Name: "c", ID: "c1", Partitions: 1, RF: 1,
			Configs: map[string]string{bad.key: bad.value}})
		wantCode(t, err, wire.InvalidConfig, "config "+bad.key+": want ")
		_, err = DecideAlterConfigs(img, AlterConfigsEvent{Topic: "payments", Set: map[string]string{bad.key: bad.value}})
		wantCode(t, err, wire.InvalidConfig, "config "+bad.key+": want ")
	}
	recs, err := DecideCreateTopic(img, CreateTopicEvent{Name: "c", ID: "c1", Partitions: 1, RF: 1,
		Configs: map[string]string{ConfigMessageTimestampType: TimestampLogAppendTime, ConfigMaxMessageBytes: "128"}})
	if err != nil {
		t.Fatal(err)
	}
	next := mustApply(t, img, recs)
	tp, _ := next.Topic("c")
	if got, want := tp.Messages(nil), (Messages{LogAppendTime: true, BeforeMaxMs: -1, AfterMaxMs: -1, MaxBytes: 128}); got != want {
		t.Fatalf("created: %+v, want %+v", got, want)
	}

	apply := applier(t, &img)
	apply(DecideAlterConfigs(img, AlterConfigsEvent{Topic: "payments", Set: map[string]string{
		ConfigMessageTimestampType: TimestampCreateTime, ConfigMessageTimestampBeforeMaxMs: "0",
		ConfigMessageTimestampAfterMaxMs: "3600000", ConfigMaxMessageBytes: "1048588"}}))
	tp, _ = img.Topic("payments")
	if got, want := tp.Messages(nil), (Messages{BeforeMaxMs: 0, AfterMaxMs: 3600000, MaxBytes: 1048588}); got != want {
		t.Fatalf("after alter: %+v, want %+v", got, want)
	}
	apply(DecideAlterConfigs(img, AlterConfigsEvent{Topic: "payments", Delete: []string{ConfigMessageTimestampAfterMaxMs, ConfigMaxMessageBytes}}))
	tp, _ = img.Topic("payments")
	if got, want := tp.Messages(nil), (Messages{BeforeMaxMs: 0, AfterMaxMs: -1}); got != want {
		t.Fatalf("after delete: %+v, want %+v", got, want)
	}

	// Values stored before the keys were known.
	old := TopicState{Configs: map[string]string{ConfigMessageTimestampType: "x", ConfigMessageTimestampBeforeMaxMs: "-3",
		ConfigMaxMessageBytes: "12"}}
	if got, want := old.Messages(nil), (Messages{BeforeMaxMs: -1, AfterMaxMs: -1}); got != want {
		t.Fatalf("old values: %+v, want %+v", got, want)
	}
}

// The cluster's log.message.timestamp.* configs are the defaults of the
// topic keys: a topic that does not set a key takes the cluster's, one that
// does keeps its own; bad values are refused naming the cluster key.
func TestMessageConfigsClusterDefaults(t *testing.T) {
	img := upgradedImage(t, seededImage(t))
	for _, bad := range []struct{ key, value string }{
		{ConfigLogMessageTimestampType, "Append"}, {ConfigLogMessageTimestampBeforeMaxMs, "-1"},
		{ConfigLogMessageTimestampAfterMaxMs, "x"},
	} {
		_, err := DecideAlterClusterConfigs(img, AlterClusterConfigsEvent{Set: map[string]string{bad.key: bad.value}})
		wantCode(t, err, wire.InvalidConfig, "config "+bad.key+": want ")
	}
	img = mustApply(t, img, mustDecide(t)(DecideAlterClusterConfigs(img, AlterClusterConfigsEvent{Set: map[string]string{
		ConfigLogMessageTimestampType: TimestampLogAppendTime, ConfigLogMessageTimestampAfterMaxMs: "60000"}})))
	apply := applier(t, &img)
	apply(DecideAlterConfigs(img, AlterConfigsEvent{Topic: "payments", Set: map[string]string{ConfigMessageTimestampAfterMaxMs: "1000"}}))
	tp, _ := img.Topic("payments")
	if got, want := tp.Messages(img.ClusterConfigs()), (Messages{LogAppendTime: true, BeforeMaxMs: -1, AfterMaxMs: 1000}); got != want {
		t.Fatalf("cluster default type, topic's own bound: %+v, want %+v", got, want)
	}
	apply(DecideAlterConfigs(img, AlterConfigsEvent{Topic: "payments", Set: map[string]string{ConfigMessageTimestampType: TimestampCreateTime},
		Delete: []string{ConfigMessageTimestampAfterMaxMs}}))
	tp, _ = img.Topic("payments")
	if got, want := tp.Messages(img.ClusterConfigs()), (Messages{BeforeMaxMs: -1, AfterMaxMs: 60000}); got != want {
		t.Fatalf("topic's own type, cluster default bound: %+v, want %+v", got, want)
	}
}

// The cluster's message.max.bytes is the default max.message.bytes: the
// broker's policy says where it came from, and the Metadata answer gives
// producers the limit that applies either way.
func TestMessageMaxBytesClusterDefault(t *testing.T) {
	img := upgradedImage(t, seededImage(t))
	_, err := DecideAlterClusterConfigs(img, AlterClusterConfigsEvent{Set: map[string]string{ConfigMessageMaxBytes: "100"}})
	wantCode(t, err, wire.InvalidConfig, "config message.max.bytes: want an integer from 128")
	img = mustApply(t, img, mustDecide(t)(DecideAlterClusterConfigs(img, AlterClusterConfigsEvent{Set: map[string]string{ConfigMessageMaxBytes: "4096"}})))
	tp, _ := img.Topic("payments")
	if got, want := tp.Messages(img.ClusterConfigs()), (Messages{BeforeMaxMs: -1, AfterMaxMs: -1, MaxBytes: 4096, MaxBytesFromCluster: true}); got != want {
		t.Fatalf("cluster default: %+v, want %+v", got, want)
	}
	if tm := img.MetadataResponse([]string{"payments"}).Topics[0]; tm.MaxMessageBytes != 4096 {
		t.Fatalf("metadata answer: max message bytes %d, want the cluster's 4096", tm.MaxMessageBytes)
	}
	apply := applier(t, &img)
	apply(DecideAlterConfigs(img, AlterConfigsEvent{Topic: "payments", Set: map[string]string{ConfigMaxMessageBytes: "1048588"}}))
	tp, _ = img.Topic("payments")
	if got := tp.Messages(img.ClusterConfigs()); got.MaxBytes != 1048588 || got.MaxBytesFromCluster {
		t.Fatalf("the topic's own: %+v", got)
	}
	if tm := img.MetadataResponse([]string{"payments"}).Topics[0]; tm.MaxMessageBytes != 1048588 {
		t.Fatalf("metadata answer: max message bytes %d, want the topic's 1048588", tm.MaxMessageBytes)
	}
}
