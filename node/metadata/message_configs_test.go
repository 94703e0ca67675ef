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
	if got, want := (TopicState{}).Messages(), (Messages{BeforeMaxMs: -1, AfterMaxMs: -1}); got != want {
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
	if got, want := tp.Messages(), (Messages{LogAppendTime: true, BeforeMaxMs: -1, AfterMaxMs: -1, MaxBytes: 128}); got != want {
		t.Fatalf("created: %+v, want %+v", got, want)
	}

	apply := applier(t, &img)
	apply(DecideAlterConfigs(img, AlterConfigsEvent{Topic: "payments", Set: map[string]string{
		ConfigMessageTimestampType: TimestampCreateTime, ConfigMessageTimestampBeforeMaxMs: "0",
		ConfigMessageTimestampAfterMaxMs: "3600000", ConfigMaxMessageBytes: "1048588"}}))
	tp, _ = img.Topic("payments")
	if got, want := tp.Messages(), (Messages{BeforeMaxMs: 0, AfterMaxMs: 3600000, MaxBytes: 1048588}); got != want {
		t.Fatalf("after alter: %+v, want %+v", got, want)
	}
	apply(DecideAlterConfigs(img, AlterConfigsEvent{Topic: "payments", Delete: []string{ConfigMessageTimestampAfterMaxMs, ConfigMaxMessageBytes}}))
	tp, _ = img.Topic("payments")
	if got, want := tp.Messages(), (Messages{BeforeMaxMs: 0, AfterMaxMs: -1}); got != want {
		t.Fatalf("after delete: %+v, want %+v", got, want)
	}

	// Values stored before the keys were known.
	old := TopicState{Configs: map[string]string{ConfigMessageTimestampType: "x", ConfigMessageTimestampBeforeMaxMs: "-3",
		ConfigMaxMessageBytes: "12"}}
	if got, want := old.Messages(), (Messages{BeforeMaxMs: -1, AfterMaxMs: -1}); got != want {
		t.Fatalf("old values: %+v, want %+v", got, want)
	}
}
