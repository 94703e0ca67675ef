package quic_test

// Fuzz targets for every wire message decoder. They live in package quic_test
// because wire imports quic (for FrameType).

import (
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"paymentlog/quic"
	"paymentlog/wire"
)

// wireMessages lists a constructor for every top-level wire message.
var wireMessages = []func() any{
	func() any { return new(wire.MetadataRequest) }, func() any { return new(wire.MetadataResponse) },
	func() any { return new(wire.CreateTopicRequest) }, func() any { return new(wire.CreateTopicResponse) },
	func() any { return new(wire.DeleteTopicRequest) }, func() any { return new(wire.DeleteTopicResponse) },
	func() any { return new(wire.DescribeClusterRequest) }, func() any { return new(wire.DescribeClusterResponse) },
	func() any { return new(wire.InitProducerIDRequest) }, func() any { return new(wire.InitProducerIDResponse) },
	func() any { return new(wire.ProduceRequest) }, func() any { return new(wire.ProduceResponse) },
	func() any { return new(wire.FetchRequest) }, func() any { return new(wire.FetchResponse) },
	func() any { return new(wire.ListOffsetsRequest) }, func() any { return new(wire.ListOffsetsResponse) },
	func() any { return new(wire.DeleteRecordsRequest) }, func() any { return new(wire.DeleteRecordsResponse) },
	func() any { return new(wire.ReplicaFetchOpen) },
	func() any { return new(wire.ReplicaFetchRequest) }, func() any { return new(wire.ReplicaFetchResponse) },
	func() any { return new(wire.AlterPartitionRequest) }, func() any { return new(wire.AlterPartitionResponse) },
	func() any { return new(wire.BrokerRegisterRequest) }, func() any { return new(wire.BrokerRegisterResponse) },
	func() any { return new(wire.BrokerHeartbeatRequest) }, func() any { return new(wire.BrokerHeartbeatResponse) },
	func() any { return new(wire.AllocateProducerIDsRequest) }, func() any { return new(wire.AllocateProducerIDsResponse) },
	func() any { return new(wire.DescribeReplicaRequest) }, func() any { return new(wire.DescribeReplicaResponse) },
	func() any { return new(wire.DescribeQuorumRequest) }, func() any { return new(wire.DescribeQuorumResponse) },
	func() any { return new(wire.CreatePartitionsRequest) }, func() any { return new(wire.CreatePartitionsResponse) },
	func() any { return new(wire.ReassignPartitionRequest) }, func() any { return new(wire.ReassignPartitionResponse) },
	func() any { return new(wire.AlterReplicationFactorRequest) }, func() any { return new(wire.AlterReplicationFactorResponse) },
	func() any { return new(wire.AlterClusterConfigsRequest) }, func() any { return new(wire.AlterClusterConfigsResponse) },
	func() any { return new(wire.UnregisterBrokerRequest) }, func() any { return new(wire.UnregisterBrokerResponse) },
	func() any { return new(wire.OffsetCommitRequest) }, func() any { return new(wire.OffsetCommitResponse) },
	func() any { return new(wire.OffsetFetchRequest) }, func() any { return new(wire.OffsetFetchResponse) },
	func() any { return new(wire.ListGroupsRequest) }, func() any { return new(wire.ListGroupsResponse) },
	func() any { return new(wire.DeleteGroupRequest) }, func() any { return new(wire.DeleteGroupResponse) },
	func() any { return new(wire.GroupHeartbeatRequest) }, func() any { return new(wire.GroupHeartbeatResponse) },
	func() any { return new(wire.CreateACLsRequest) }, func() any { return new(wire.CreateACLsResponse) },
	func() any { return new(wire.DeleteACLsRequest) }, func() any { return new(wire.DeleteACLsResponse) },
	func() any { return new(wire.DescribeACLsRequest) }, func() any { return new(wire.DescribeACLsResponse) },
	func() any { return new(wire.AlterClientQuotasRequest) }, func() any { return new(wire.AlterClientQuotasResponse) },
	func() any { return new(wire.DescribeClientQuotasRequest) }, func() any { return new(wire.DescribeClientQuotasResponse) },
}

// wireSeeds are valid encodings of representative messages.
func wireSeeds() []any {
	return []any{
		&wire.MetadataRequest{Topics: []string{"payments"}},
		&wire.MetadataRequest{WaitAbove: 812, MaxWaitMs: 1000},
		&wire.MetadataResponse{ControllerID: 1, Brokers: []wire.BrokerInfo{{ID: 1, Addr: "127.0.0.1:7101", State: "alive"}},
			Topics: []wire.TopicMetadata{{Name: "payments", Partitions: []wire.PartitionMetadata{{Partition: 0, Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}}}}}},
		&wire.CreateTopicRequest{Name: "t", Partitions: 3, ReplicationFactor: 3, Configs: map[string]string{"retention.ms": "1000"}},
		&wire.ProduceRequest{Acks: -1, Topic: "payments", Parts: []wire.ProducePartition{{Partition: 0, LeaderEpoch: 2, Batch: []byte("batch bytes")}}},
		&wire.FetchResponse{Parts: []wire.FetchPartitionResponse{{Partition: 1, HighWatermark: 10, Records: []byte{1, 2, 3}}}},
		&wire.DeleteRecordsRequest{Topic: "payments", Parts: []wire.DeleteRecordsPartition{{Partition: 0, Offset: 120}, {Partition: 1, Offset: wire.DeleteRecordsLatest}}},
		&wire.DeleteRecordsResponse{Parts: []wire.DeleteRecordsPartitionResponse{{Partition: 0, LowWatermark: 120, LeaderHint: 1},
			{Partition: 1, Err: wire.PolicyViolation, Message: "compacted", LowWatermark: -1, LeaderHint: 2}}},
		&wire.FetchRequest{MaxWaitMs: 500, MinBytes: 1, Topic: "payments",
			Parts: []wire.FetchPartition{{Offset: 3, LeaderEpoch: 2, LastFetchedEpoch: 1}, {Partition: 1, LastFetchedEpoch: -1}}},
		&wire.FetchResponse{Parts: []wire.FetchPartitionResponse{{Partition: 1, Diverging: &wire.EpochEndOffset{Epoch: 1, EndOffset: 1}}}},
		&wire.FetchRequest{MaxWaitMs: 500, MinBytes: 1, Topic: "payments", Rack: "az2",
			Parts: []wire.FetchPartition{{Partition: 0, Offset: 12, LeaderEpoch: 3, LastFetchedEpoch: 3}}},
		&wire.FetchResponse{Parts: []wire.FetchPartitionResponse{{Partition: 0, HighWatermark: 20, LeaderHint: 1, LeaderEpoch: 3, PreferredReplica: 2}}},
		&wire.ReplicaFetchRequest{MaxWaitMs: 500, Parts: []wire.ReplicaFetchPartition{{Topic: "t", FetchOffset: 7, LastFetchedEpoch: -1}}},
		&wire.ReplicaFetchResponse{Parts: []wire.ReplicaFetchPartitionResponse{{Topic: "t", DivergingEpoch: -1, Records: make([]byte, 64)}}},
		&wire.AlterPartitionRequest{BrokerID: 1, Topic: "t", NewISR: []int32{1, 2},
			Members: []wire.ISRMember{{BrokerID: 2, Incarnation: 1795998087883425915}}},
		&wire.ReplicaFetchOpen{FollowerID: 2, Incarnation: 1795998087883425915},
		&wire.BrokerHeartbeatRequest{BrokerID: 2, Incarnation: 99, MetadataOffset: 812},
		&wire.BrokerRegisterRequest{BrokerID: 2, Addr: "127.0.0.1:7102", Incarnation: 99, UnsyncedLogs: true,
			EmptyReplicas: []wire.PartitionRef{{TopicID: "0f3a", Partition: 2}, {TopicID: "77b1", Partition: 0}}, MetadataVersion: 2},
		&wire.DescribeQuorumResponse{Voters: []int32{1, 2, 3}, Controllers: "1@127.0.0.1:7101", Term: 1, LastIndex: 3, Guarded: true,
			GuardNonce: "00112233445566778899aabbccddeeff"},
		&wire.DescribeQuorumResponse{Voters: []int32{1, 2, 3}, Term: 2, Commit: 9, LastIndex: 9,
			Witnessed: map[int32]string{2: "00112233445566778899aabbccddeeff", 3: "ffeeddccbbaa99887766554433221100"}},
		&wire.DescribeQuorumResponse{Voters: []int32{1, 2, 3}, Learners: []int32{4, 5}, Term: 3, Commit: 12, LastIndex: 12, Applied: 11},
		&wire.DescribeReplicaRequest{Topic: "payments", Partition: 2},
		&wire.DescribeReplicaResponse{LogStart: 10, LogEnd: 812, HighWatermark: 800, LeaderEpoch: 4, IsLeader: true, Size: 1 << 30, Segments: 3},
		&wire.CreatePartitionsRequest{Name: "payments", Count: 5},
		&wire.CreatePartitionsResponse{Err: wire.InvalidPartitions, Message: `topic "payments" already has 5 partitions`, TopicID: "0f3a", Count: 5, ControllerID: 2},
		&wire.ReassignPartitionRequest{Topic: "payments", Partition: 2, Replicas: []int32{4, 2, 3}},
		&wire.ReassignPartitionRequest{Topic: "payments", Cancel: true},
		&wire.ReassignPartitionResponse{Err: wire.InvalidRequest, Message: "payments-0: broker 9 is not registered", ControllerID: 1,
			Partition: wire.PartitionMetadata{Leader: 1, Replicas: []int32{4, 2, 3, 1}, ISR: []int32{2, 3, 1},
				AddingReplicas: []int32{4}, RemovingReplicas: []int32{1}, HighWatermark: -1, LogStartOffset: -1}},
		&wire.AlterReplicationFactorRequest{Topic: "payments", ReplicationFactor: 4},
		&wire.AlterReplicationFactorRequest{Topic: "payments", ReplicationFactor: 2, Assignment: [][]int32{{1, 2}, {2, 3}, {3, 1}}},
		&wire.AlterReplicationFactorResponse{Err: wire.InvalidReplicationFactor, ControllerID: 1, ReplicationFactor: 3,
			Message: `replication factor 1 is below topic "payments"'s min.insync.replicas 2: lower that first`},
		&wire.AlterClusterConfigsRequest{Set: map[string]string{"reassignment.throttle.bytes": "10485760"}, Delete: []string{"x"}},
		&wire.AlterClusterConfigsResponse{Err: wire.InvalidConfig, Message: `unknown cluster config "x"`, MetadataOffset: 812, ControllerID: 1},
		&wire.UnregisterBrokerRequest{BrokerID: 4},
		&wire.UnregisterBrokerResponse{Err: wire.InvalidRequest, ControllerID: 1,
			Message: "broker 4 still holds replicas of 1 partitions (payments-2): move them to other brokers first (topic reassign)"},
		&wire.OffsetCommitRequest{Group: "billing", Offsets: []wire.GroupOffset{{Topic: "payments", TopicID: "0f3a", Partition: 2, Offset: 812, LeaderEpoch: 4, Metadata: "host-1"}}},
		&wire.OffsetCommitRequest{Group: "billing", Offsets: []wire.GroupOffset{{Topic: "payments", Partition: 0, Offset: 3, LeaderEpoch: -1}}, Audit: true},
		&wire.OffsetCommitResponse{Err: wire.UnknownTopicOrPartition, Message: "partition payments-9 does not exist (3 partitions)", MetadataOffset: 812, ControllerID: 1},
		&wire.OffsetFetchRequest{Group: "billing", Topics: []string{"payments"}},
		&wire.OffsetFetchResponse{ControllerID: 1, Offsets: []wire.GroupOffset{{Topic: "payments", TopicID: "0f3a", Partition: 0, Offset: 7, LeaderEpoch: -1, CommitTimeMs: 1795998087883}}},
		&wire.ListGroupsResponse{ControllerID: 1, Groups: []wire.GroupSummary{{Group: "billing", Partitions: 3, LastCommitMs: 1795998087883}}},
		&wire.DeleteGroupRequest{Group: "billing"},
		&wire.GroupHeartbeatRequest{Group: "billing", MemberID: "1.7.3", MemberEpoch: 4, ClientID: "host-1/812",
			Topics: []string{"payments", "refunds"}, Owned: []wire.GroupPartitions{{Topic: "payments", Partitions: []int32{0, 2}}},
			RebalanceTimeoutMs: 300_000, InstanceID: "billing-3"},
		&wire.GroupHeartbeatRequest{Group: "billing", MemberEpoch: 0, TopicPattern: "payments-.*"},
		&wire.GroupHeartbeatResponse{ControllerID: 1, MemberID: "1.7.3", MemberEpoch: 5, HeartbeatIntervalMs: 1000, SessionTimeoutMs: 10000,
			Assigned: []wire.GroupPartitions{{Topic: "payments", Partitions: []int32{0}}, {Topic: "refunds", Partitions: []int32{1}}}},
		&wire.OffsetFetchResponse{ControllerID: 1, Offsets: []wire.GroupOffset{}, Members: []wire.GroupMember{{MemberID: "1.7.3", ClientID: "host-1/812",
			MemberEpoch: 5, Topics: []string{"payments"}, Assigned: []wire.GroupPartitions{{Topic: "payments", Partitions: []int32{0}}}, LastHeartbeatMs: 1795998087883,
			InstanceID: "billing-3", Departed: true, TopicPattern: "payments-.*"}}},
		&wire.DeleteGroupResponse{Err: wire.GroupIDNotFound, Message: "group billing does not exist", ControllerID: 1},
		&wire.CreateACLsRequest{ACLs: []wire.ACLBinding{{Principal: "User:billing", ResourceType: "topic", PatternType: "prefixed",
			Name: "payments-", Operation: "read", Permission: "allow"}}},
		&wire.CreateACLsRequest{ACLs: []wire.ACLBinding{{Principal: "User:checkout", ResourceType: "topic", PatternType: "literal",
			Name: "payments", Operation: "write", Permission: "allow", Host: "10.1.0.0/16"}}},
		&wire.DeleteACLsRequest{Filters: []wire.ACLFilter{{Principal: "User:checkout", Host: "*"}}},
		&wire.CreateACLsResponse{Created: 1, MetadataOffset: 812, ControllerID: 1},
		&wire.DeleteACLsRequest{Filters: []wire.ACLFilter{{Principal: "User:billing"}, {ResourceType: "group", Name: "billing"}}},
		&wire.DeleteACLsResponse{Deleted: []wire.ACLBinding{{Principal: "User:*", ResourceType: "cluster", PatternType: "literal",
			Name: "cluster", Operation: "describe", Permission: "deny"}}, ControllerID: 1},
		&wire.DescribeACLsRequest{Filter: wire.ACLFilter{Operation: "write"}},
		&wire.AlterClientQuotasRequest{Entries: []wire.QuotaEntry{{Principal: "User:reporting", Set: map[string]int64{"consumer_byte_rate": 10 << 20}},
			{Delete: []string{"producer_byte_rate"}}}},
		&wire.DescribeClientQuotasResponse{Quotas: []wire.ClientQuota{{Values: map[string]int64{"producer_byte_rate": 50 << 20}}}, MetadataOffset: 812},
		&wire.ProduceResponse{Parts: []wire.ProducePartitionResponse{{Partition: 0, BaseOffset: 7}}, ThrottleMs: 250},
		&wire.ProduceResponse{Parts: []wire.ProducePartitionResponse{{Partition: 0, BaseOffset: 7, LogAppendTime: 1795998087883},
			{Partition: 1, Err: wire.InvalidTimestamp, Message: "record 0 of the batch has timestamp 1"}}},
		&wire.ReplicaFetchRequest{MaxWaitMs: 500, Parts: []wire.ReplicaFetchPartition{{Topic: "t", FetchOffset: 7, LastFetchedEpoch: -1, LogStart: new(int64(3))}}},
		&wire.DeleteRecordsRequest{Topic: "payments", Parts: []wire.DeleteRecordsPartition{{Partition: 0, Offset: 120}}, TimeoutMs: 8750},
		&wire.FetchResponse{Parts: []wire.FetchPartitionResponse{{Partition: 0, HighWatermark: 9}}, ThrottleMs: 480},
		&wire.DescribeACLsResponse{Err: wire.ClusterAuthorizationFailed, Message: "principal User:mallory may not describe the cluster"},
		&wire.DescribeClusterResponse{ControllerID: 1, MetadataOffset: 812, Brokers: []wire.BrokerInfo{{ID: 1, Addr: "127.0.0.1:7101", State: "alive"}},
			Configs: map[string]string{"reassignment.throttle.bytes": "0"}},
	}
}

// FuzzDecodeWireMessages decodes arbitrary bytes into every wire message. No
// input may panic or get past the length checks into a huge allocation,
// DecodeNoCopy must agree with Decode, and whatever decodes must survive an
// encode/decode round trip unchanged.
func FuzzDecodeWireMessages(f *testing.F) {
	for _, m := range wireSeeds() {
		b, err := msgpack.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0xdd, 0x80, 0, 0, 0})                                               // #401 bomb
	f.Add([]byte{0x81, 0xa5, 'p', 'a', 'r', 't', 's', 0xdd, 0x7f, 0xff, 0xff, 0xff}) // bomb in a field
	f.Fuzz(func(t *testing.T, body []byte) {
		fr := quic.Frame{Type: 1, Body: body}
		for _, mk := range wireMessages {
			v := mk()
			err := fr.Decode(v)
			// Decoding in place (batches aliasing the body) accepts and
			// yields exactly what copying does.
			nc := mk()
			if ncErr := fr.DecodeNoCopy(nc); (ncErr == nil) != (err == nil) {
				t.Fatalf("%T: Decode: %v, DecodeNoCopy: %v", v, err, ncErr)
			} else if err == nil && !reflect.DeepEqual(v, nc) {
				t.Fatalf("%T: DecodeNoCopy differs from Decode:\n%#v\n%#v", v, nc, v)
			}
			if err != nil {
				continue
			}
			b, err := msgpack.Marshal(v)
			if err != nil {
				t.Fatalf("%T: re-encode: %v", v, err)
			}
			w := mk()
			if err := (quic.Frame{Type: 1, Body: b}).Decode(w); err != nil {
				t.Fatalf("%T: decode of re-encoded value: %v", v, err)
			}
			if !reflect.DeepEqual(v, w) {
				t.Fatalf("%T: round trip changed the value:\n%#v\n%#v", v, v, w)
			}
		}
	})
}

func TestWireSeedsRoundTrip(t *testing.T) {
	for _, m := range wireSeeds() {
		b, err := msgpack.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		w := reflect.New(reflect.TypeOf(m).Elem()).Interface()
		if err := (quic.Frame{Body: b}).Decode(w); err != nil {
			t.Fatalf("%T: %v", m, err)
		}
		if !reflect.DeepEqual(m, w) {
			t.Fatalf("%T: round trip changed the value", m)
		}
	}
}
