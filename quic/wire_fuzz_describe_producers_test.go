package quic_test

import (
	"testing"

	"paymentlog/wire"
)

// DescribeProducers (frame type 35) is fuzzed with every other wire message.
func init() {
	wireMessages = append(wireMessages,
		func() any { return new(wire.DescribeProducersRequest) }, func() any { return new(wire.DescribeProducersResponse) })
}

// describeProducersSeeds are the DescribeProducers messages of the
// committed corpus (testdata/fuzz/FuzzDecodeWireMessages/seed-describe-producers-*).
func describeProducersSeeds() map[string]any {
	return map[string]any{
		"seed-describe-producers-request": &wire.DescribeProducersRequest{Topic: "payments", Partitions: []int32{0, 2}, AnyReplica: true},
		"seed-describe-producers-response": &wire.DescribeProducersResponse{Parts: []wire.DescribeProducersPartition{
			{Partition: 0, LeaderHint: 1, IsLeader: true, ExpirationMs: 86_400_000, Omitted: 3, Producers: []wire.ProducerState{
				{ProducerID: 4001, ProducerEpoch: 2, LastSequence: 811, LastTimestamp: 1795998087883, FirstOffset: 9120, LastOffset: 9131, Batches: 5, ExpiresInMs: 86_000_000},
				{ProducerID: 4002, LastSequence: -1, LastTimestamp: -1, FirstOffset: -1, LastOffset: -1, ExpiresInMs: -1}}},
			{Partition: 2, Err: wire.KafkaStorageError, Message: "producer state of payments/2 unknown", LeaderHint: 3}}},
		"seed-describe-producers-refused": &wire.DescribeProducersResponse{Err: wire.TopicAuthorizationFailed,
			Message: "principal User:billing may not describe topic \"payments\""},
	}
}

// TestDescribeProducersFuzzSeeds checks the committed seeds still encode
// the messages (PAYMENTLOG_REWRITE_SEEDS=1 rewrites them).
func TestDescribeProducersFuzzSeeds(t *testing.T) { checkFuzzSeedFiles(t, describeProducersSeeds()) }
