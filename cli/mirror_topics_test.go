package cli

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/segment"
)

func describedTopic(name string, parts int, rf, minISR int32, configs map[string]string) client.TopicDescription {
	d := client.TopicDescription{Name: name, ReplicationFactor: rf, MinISR: minISR, Configs: configs}
	for p := range int32(parts) {
		d.Partitions = append(d.Partitions, client.PartitionInfo{Partition: p})
	}
	return d
}

// planTopic: a missing topic is created as a copy (the source's RF and min
// ISR capped at the target's brokers, or the flags'; the configs without
// the timestamp bounds); one with fewer partitions grows; one with more,
// or another cleanup.policy, is refused naming the topic.
func TestPlanTopic(t *testing.T) {
	src := describedTopic("payments", 6, 3, 2, map[string]string{"retention.ms": "1000", "cleanup.policy": "delete,compact",
		"message.timestamp.before.max.ms": "5", "message.timestamp.after.max.ms": "5", "max.message.bytes": "65536"})
	plan, err := planTopic(src, nil, "payments", topicDefaults{brokers: 1})
	want := client.TopicSpec{Name: "payments", Partitions: 6, ReplicationFactor: 1, MinISR: 1,
		Configs: map[string]string{"retention.ms": "1000", "cleanup.policy": "delete,compact", "max.message.bytes": "65536"}}
	if err != nil || plan.action != topicCreate || !specEqual(plan.spec, want) {
		t.Fatalf("missing on a 1-broker target: %+v, %v; want create %+v", plan, err, want)
	}
	if plan, _ = planTopic(src, nil, "payments", topicDefaults{brokers: 5}); plan.spec.ReplicationFactor != 3 || plan.spec.MinISR != 2 {
		t.Fatalf("missing on a 5-broker target: RF %d, min ISR %d; want the source's 3 and 2", plan.spec.ReplicationFactor, plan.spec.MinISR)
	}
	if plan, _ = planTopic(src, nil, "payments", topicDefaults{brokers: 5, replicationFactor: 4}); plan.spec.ReplicationFactor != 4 || plan.spec.MinISR != 2 {
		t.Fatalf("--replication-factor 4: RF %d, min ISR %d; want 4 and 2", plan.spec.ReplicationFactor, plan.spec.MinISR)
	}
	if src.Configs["message.timestamp.before.max.ms"] == "" {
		t.Fatal("planTopic changed the source description's configs")
	}

	fewer := describedTopic("payments", 4, 1, 1, map[string]string{"cleanup.policy": "compact,delete"})
	if plan, err = planTopic(src, &fewer, "payments", topicDefaults{}); err != nil || plan.action != topicGrow || plan.spec.Partitions != 6 {
		t.Fatalf("4 partitions on the target: %+v, %v; want grow to 6", plan, err)
	}
	same := describedTopic("payments", 6, 1, 1, map[string]string{"cleanup.policy": "compact,delete"})
	if plan, err = planTopic(src, &same, "payments", topicDefaults{}); err != nil || plan.action != topicInPlace {
		t.Fatalf("same partitions: %+v, %v; want nothing to do", plan, err)
	}
	more := describedTopic("payments", 8, 1, 1, map[string]string{"cleanup.policy": "compact,delete"})
	if _, err = planTopic(src, &more, "payments", topicDefaults{}); err == nil || !strings.Contains(err.Error(), "topic payments has 8 partitions on the target and 6 on the source") {
		t.Fatalf("8 partitions on the target: %v", err)
	}
	deleting := describedTopic("payments", 6, 1, 1, nil)
	if _, err = planTopic(src, &deleting, "payments", topicDefaults{}); err == nil ||
		!strings.Contains(err.Error(), "topic payments has cleanup.policy=delete on the target and compact,delete on the source") {
		t.Fatalf("another cleanup.policy: %v", err)
	}
}

func specEqual(a, b client.TopicSpec) bool {
	return a.Name == b.Name && a.Partitions == b.Partitions && a.ReplicationFactor == b.ReplicationFactor && a.MinISR == b.MinISR &&
		maps.Equal(a.Configs, b.Configs)
}

// mirrorRecord copies a record to the same partition, keeps a tombstone a
// tombstone and a missing key missing, and replaces an earlier mirror
// header with the record's own source position.
func TestMirrorRecord(t *testing.T) {
	ts := time.UnixMilli(1700000000123)
	msg := &client.Message{Topic: "payments", Partition: 2, Offset: 41, Timestamp: ts, Value: nil,
		Headers: []segment.RecordHeader{{Key: "trace", Value: []byte("x")}, {Key: mirrorHeader, Value: []byte("payments/2/7")}}}
	rec := mirrorRecord(msg, "payments", true)
	want := []segment.RecordHeader{{Key: "trace", Value: []byte("x")}, {Key: mirrorHeader, Value: []byte("payments/2/41")}}
	if rec.Topic != "payments" || rec.Partition != 2 || !rec.PartitionSet || rec.Key != nil || rec.Value != nil || !rec.Timestamp.Equal(ts) ||
		!slices.EqualFunc(rec.Headers, want, func(a, b segment.RecordHeader) bool { return a.Key == b.Key && string(a.Value) == string(b.Value) }) {
		t.Fatalf("mirrorRecord: %+v; headers want %q", rec, want)
	}
	if string(msg.Headers[1].Value) != "payments/2/7" {
		t.Fatal("mirrorRecord changed the source record's headers")
	}
	if rec = mirrorRecord(msg, "payments", false); len(rec.Headers) != 2 || string(rec.Headers[1].Value) != "payments/2/7" {
		t.Fatalf("without the header: %q; want the source's headers as they were", rec.Headers)
	}
}
