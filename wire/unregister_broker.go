package wire

// TypeUnregisterBroker is the frame type of UnregisterBroker (Kafka's
// UnregisterBroker, `kafka-cluster.sh unregister`). Part of the wire
// format: never renumber.
const TypeUnregisterBroker = 14

// UnregisterBrokerRequest asks the active controller to remove a
// decommissioned broker's registration. It may be sent to any node: a node
// that is not the active controller answers NotController with the hint.
// Refused with BrokerNotRegistered for an id not registered (also once an
// earlier request removed it), with InvalidRequest for a broker that is
// alive, a controller, or still assigned replicas (the message names the
// partitions), and with UnsupportedVersion while an alive broker's build
// applies metadata versions below 3.
type UnregisterBrokerRequest struct {
	BrokerID int32 `msgpack:"id"`
}

// UnregisterBrokerResponse answers once the removal is committed.
// MetadataOffset is the metadata offset it is in.
type UnregisterBrokerResponse struct {
	Err            ErrorCode `msgpack:"err"`
	Message        string    `msgpack:"msg"`
	MetadataOffset int64     `msgpack:"moff"`
	ControllerID   int32     `msgpack:"ctrl"` // with NotController: the active controller, -1 if unknown
}
