package metadata

import (
	"strings"
	"testing"

	"paymentlog/wire"
)

// compression.type: Kafka's topic values this build stores are accepted on
// creation and alteration and read by TopicState.Messages ("producer", the
// default, reads as ""); gzip, snappy and the producers' "none" are refused
// naming why, anything else naming the values; the cluster's
// compression.type is the default of a topic that sets none; a value
// stored before the key was known acts as producer.
func TestCompressionTypeConfig(t *testing.T) {
	img := upgradedImage(t, seededImage(t))
	for _, bad := range []struct{ value, why string }{
		{"gzip", "this build neither reads nor writes gzip"},
		{"snappy", "this build neither reads nor writes snappy"},
		{"none", "a topic's name for no compression is uncompressed"},
		{"ZSTD", `got "ZSTD"`}, {"", `got ""`}, {"lz4 ", `got "lz4 "`}, {"brotli", `got "brotli"`},
	} {
		const want = "config compression.type: want producer, uncompressed, lz4 or zstd, got "
		_, err := DecideCreateTopic(img, CreateTopicEvent{Name: "c", ID: "c1", Partitions: 1, RF: 1,
			Configs: map[string]string{ConfigCompressionType: bad.value}})
		wantCode(t, err, wire.InvalidConfig, want)
		wantCode(t, err, wire.InvalidConfig, bad.why)
		if strings.Contains(err.Error(), "\n") {
			t.Fatalf("a message of several lines: %q", err)
		}
		_, err = DecideAlterConfigs(img, AlterConfigsEvent{Topic: "payments", Set: map[string]string{ConfigCompressionType: bad.value}})
		wantCode(t, err, wire.InvalidConfig, want)
		wantCode(t, err, wire.InvalidConfig, bad.why)
		_, err = DecideAlterClusterConfigs(img, AlterClusterConfigsEvent{Set: map[string]string{ConfigClusterCompressionType: bad.value}})
		wantCode(t, err, wire.InvalidConfig, want)
	}

	for _, v := range []struct{ value, want string }{
		{CompressionProducer, ""}, {CompressionUncompressed, CompressionUncompressed},
		{CompressionLZ4, CompressionLZ4}, {CompressionZstd, CompressionZstd},
	} {
		recs, err := DecideCreateTopic(img, CreateTopicEvent{Name: "c", ID: "c1", Partitions: 1, RF: 1,
			Configs: map[string]string{ConfigCompressionType: v.value}})
		if err != nil {
			t.Fatalf("%s: %v", v.value, err)
		}
		tp, _ := mustApply(t, img, recs).Topic("c")
		if got := tp.Messages(nil).Compression; got != v.want {
			t.Fatalf("created with %s: Compression %q, want %q", v.value, got, v.want)
		}
	}

	apply := applier(t, &img)
	apply(DecideAlterConfigs(img, AlterConfigsEvent{Topic: "payments", Set: map[string]string{ConfigCompressionType: CompressionZstd}}))
	tp, _ := img.Topic("payments")
	if got, want := tp.Messages(nil), (Messages{BeforeMaxMs: -1, AfterMaxMs: -1, Compression: CompressionZstd}); got != want {
		t.Fatalf("altered to zstd: %+v, want %+v", got, want)
	}
	// The cluster's default applies once the topic's own key is deleted.
	apply(DecideAlterClusterConfigs(img, AlterClusterConfigsEvent{Set: map[string]string{ConfigClusterCompressionType: CompressionLZ4}}))
	tp, _ = img.Topic("payments")
	if got := tp.Messages(img.ClusterConfigs()).Compression; got != CompressionZstd {
		t.Fatalf("the topic's own zstd under a cluster lz4: %q", got)
	}
	apply(DecideAlterConfigs(img, AlterConfigsEvent{Topic: "payments", Delete: []string{ConfigCompressionType}}))
	tp, _ = img.Topic("payments")
	if got := tp.Messages(img.ClusterConfigs()).Compression; got != CompressionLZ4 {
		t.Fatalf("deleted, under a cluster lz4: %q, want lz4", got)
	}
	// A topic's producer overrides the cluster's codec.
	apply(DecideAlterConfigs(img, AlterConfigsEvent{Topic: "payments", Set: map[string]string{ConfigCompressionType: CompressionProducer}}))
	tp, _ = img.Topic("payments")
	if got := tp.Messages(img.ClusterConfigs()).Compression; got != "" {
		t.Fatalf("the topic's producer under a cluster lz4: %q, want \"\"", got)
	}

	// Values stored before the key was known (any string) act as producer.
	for _, v := range []string{"gzip", "none", "x"} {
		old := TopicState{Configs: map[string]string{ConfigCompressionType: v}}
		if got := old.Messages(nil).Compression; got != "" {
			t.Fatalf("stored %q: Compression %q, want \"\" (producer)", v, got)
		}
	}
}
