package segment

import "hash/crc32"

// AttrLogAppendTime is the Attributes bit (Kafka's bit 3, timestamp type)
// of a batch whose records' timestamps are the time its leader appended it
// (a topic with message.timestamp.type=LogAppendTime): the leader sets
// the bit and both FirstTimestamp and MaxTimestamp to its clock
// (StampLogAppendTime), and readers give every record of the batch
// MaxTimestamp (Records), whatever its TimestampDelta says (the
// producer's times, kept but not read). Producers never set it.
const AttrLogAppendTime int16 = 1 << 3

// LogAppendTime reports whether the batch's records carry the time the
// leader appended it (AttrLogAppendTime).
func (h Header) LogAppendTime() bool { return h.Attributes&AttrLogAppendTime != 0 }

// LogAppendTime reports whether the batch's records carry the time the
// leader appended it (the header must be there).
func (b Batch) LogAppendTime() bool {
	return int16(be.Uint16(b[offAttributes:]))&AttrLogAppendTime != 0
}

// StampLogAppendTime marks a whole, valid batch as appended at ms, unix
// milliseconds (AttrLogAppendTime), in place, and recomputes its CRC:
// one pass over the batch's bytes.
func (b Batch) StampLogAppendTime(ms int64) {
	be.PutUint16(b[offAttributes:], be.Uint16(b[offAttributes:])|uint16(AttrLogAppendTime))
	be.PutUint64(b[offFirstTimestamp:], uint64(ms))
	be.PutUint64(b[offMaxTimestamp:], uint64(ms))
	be.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:b.Size()], castagnoli))
}
