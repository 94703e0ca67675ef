package wire

// TypeDeleteRecords moves partitions' log start offsets up (Kafka's
// DeleteRecords, kafka-delete-records): every record below the offset
// goes, on the leader at once and on each follower at its next fetch. It
// is sent to each partition's leader.
const TypeDeleteRecords = 34

// DeleteRecordsLatest as DeleteRecordsPartition.Offset deletes every
// record below the high watermark.
const DeleteRecordsLatest int64 = -1

// MaxDeleteRecordsParts bounds a DeleteRecordsRequest's partitions (a
// topic's most).
const MaxDeleteRecordsParts = 10_000

// DeleteRecordsRequest deletes, for each partition of Topic, the records
// below an offset.
//
// With TimeoutMs > 0 the leader answers each partition once every in-sync
// replica reports a log start offset at or above the offset (Kafka's
// DeleteRecords purgatory), or with Timeout and the low watermark reached
// when TimeoutMs passes first; with 0 it answers once its own log start
// moved.
type DeleteRecordsRequest struct {
	Topic     string                   `msgpack:"topic"`
	Parts     []DeleteRecordsPartition `msgpack:"parts"`
	TimeoutMs int32                    `msgpack:"timeout,omitempty"`
}

// DeleteRecordsPartition: delete the records of Partition below Offset (at
// most the high watermark; DeleteRecordsLatest: the high watermark).
type DeleteRecordsPartition struct {
	Partition int32 `msgpack:"p"`
	Offset    int64 `msgpack:"off"`
}

type DeleteRecordsResponse struct {
	Parts []DeleteRecordsPartitionResponse `msgpack:"parts"`
}

// DeleteRecordsPartitionResponse gives the partition's low watermark after
// the deletion: with a TimeoutMs, the lowest log start offset among its
// in-sync replicas (Kafka's), also with Timeout; without, the leader's;
// -1 with any other error, which says why nothing was deleted.
type DeleteRecordsPartitionResponse struct {
	Partition    int32     `msgpack:"p"`
	Err          ErrorCode `msgpack:"err"`
	Message      string    `msgpack:"msg,omitempty"`
	LowWatermark int64     `msgpack:"low"`
	LeaderHint   int32     `msgpack:"leader"`
}
