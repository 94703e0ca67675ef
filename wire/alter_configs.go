package wire

// AlterConfigsRequest (frame type 9) sets and deletes configs of one topic
// (Kafka's IncrementalAlterConfigs for a topic resource). Like
// CreateTopicRequest it may be sent to any node; a node that is not the
// active controller answers NotController with the controller as hint, and
// the client sends it there.
//
// Set and Delete take the topic config keys (metadata.KnownConfig), plus
// "min.insync.replicas" (1..replication factor), which changes the topic's
// min ISR. Deleting a key restores its default (min.insync.replicas:
// min(2, RF)). An unknown key is refused whole with InvalidConfig and the
// message "Unknown topic config name: <key>"; deleting a key the topic holds
// although it is unknown (stored before unknown keys were refused) is
// allowed. segment.bytes cannot change after creation (InvalidConfig). The
// answer comes once the change is committed to the metadata log; a request
// that changes nothing succeeds without writing a record.
type AlterConfigsRequest struct {
	Topic  string            `msgpack:"topic"`
	Set    map[string]string `msgpack:"set"`
	Delete []string          `msgpack:"delete"`
}

// AlterConfigsResponse answers an AlterConfigsRequest. MetadataOffset is
// the metadata offset the change is in (absent from older builds, and on
// an error).
type AlterConfigsResponse struct {
	Err            ErrorCode `msgpack:"err"`
	Message        string    `msgpack:"msg"`
	ControllerID   int32     `msgpack:"ctrl"` // with NotController: the active controller, -1 if unknown
	MetadataOffset int64     `msgpack:"moff,omitempty"`
}
