package broker

import (
	"errors"

	"paymentlog/node/replica"
	"paymentlog/segment"
	"paymentlog/wire"
)

// codeToWire maps a replica decision to a wire error code.
func codeToWire(c replica.Code) wire.ErrorCode {
	switch c {
	case replica.OK:
		return wire.None
	case replica.NotLeader:
		return wire.NotLeader
	case replica.FencedLeaderEpoch:
		return wire.FencedLeaderEpoch
	case replica.UnknownLeaderEpoch:
		return wire.UnknownLeaderEpoch
	case replica.NotEnoughReplicas:
		return wire.NotEnoughReplicas
	case replica.Timeout:
		return wire.Timeout
	case replica.NotEnoughReplicasAfterAppend:
		return wire.NotEnoughReplicasAfterAppend
	case replica.OffsetOutOfRange:
		return wire.OffsetOutOfRange
	case replica.NotReplica:
		return wire.InvalidRequest
	case replica.StaleIncarnation:
		return wire.StaleBrokerEpoch
	}
	return wire.Unknown
}

// readErrCode maps a segment read error.
func readErrCode(err error) wire.ErrorCode {
	var oor *segment.OffsetOutOfRangeError
	switch {
	case errors.As(err, &oor):
		return wire.OffsetOutOfRange
	case errors.Is(err, segment.ErrClosed):
		return wire.NotLeader
	}
	return wire.KafkaStorageError
}

// appendErrCode maps a segment append error.
func appendErrCode(err error) wire.ErrorCode {
	switch {
	case errors.Is(err, segment.ErrRecordTooLarge):
		return wire.RecordTooLarge
	case segment.IsCorruption(err):
		return wire.CorruptMessage
	case errors.Is(err, segment.ErrClosed):
		return wire.NotLeader
	}
	return wire.KafkaStorageError
}
