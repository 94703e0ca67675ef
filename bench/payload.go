package bench

import (
	"encoding/binary"
	"errors"
	"time"
)

// A bench record value starts with a 20-byte header; the rest is its body.
//
//	offset  size  field
//	0       8     produce time, Unix nanoseconds (big endian): end-to-end latency
//	8       4     producer index
//	12      8     sequence number within that producer, from 0
//	20      ...   body bytes up to the record size
//
// Readback checks that the record at each acknowledged offset carries the
// producer and sequence that were acknowledged there. The throughput
// benchmark's bodies are --payload's (bodies); the other benchmarks' are a
// constant filler.

var errShortPayload = errors.New("bench: record value shorter than the bench header")

// payload is one producer's reusable record value buffer.
type payload struct {
	buf    []byte
	bodies bodies // nil: the constant filler newPayload wrote
	skew   uint64 // where this producer starts in bodies
}

// newPayload is a payload of size bytes whose body is a constant filler.
func newPayload(size int) *payload {
	b := make([]byte, size)
	for i := payloadHeader; i < size; i++ {
		b[i] = byte('a' + i%26)
	}
	return &payload{buf: b}
}

// newPayloadOf is a payload of size bytes whose record seq of producer
// takes body seq+skew of b (its bodies are size-payloadHeader bytes); a nil
// b is newPayload.
func newPayloadOf(size int, b bodies, producer uint32) *payload {
	if b == nil {
		return newPayload(size)
	}
	// Producers start far apart, so that records produced at the same
	// time differ.
	return &payload{buf: make([]byte, size), bodies: b, skew: uint64(producer) * 7919}
}

// fill stamps the header and returns the value (valid until the next fill).
func (p *payload) fill(t time.Time, producer uint32, seq uint64) []byte {
	if p.bodies != nil {
		copy(p.buf[payloadHeader:], p.bodies.body(seq+p.skew))
	}
	binary.BigEndian.PutUint64(p.buf[0:], uint64(t.UnixNano()))
	binary.BigEndian.PutUint32(p.buf[8:], producer)
	binary.BigEndian.PutUint64(p.buf[12:], seq)
	return p.buf
}

// recordID identifies one produced record.
type recordID struct {
	producer uint32
	seq      uint64
}

// parsePayload reads the header of a bench record value.
func parsePayload(v []byte) (t time.Time, id recordID, err error) {
	if len(v) < payloadHeader {
		return time.Time{}, recordID{}, errShortPayload
	}
	t = time.Unix(0, int64(binary.BigEndian.Uint64(v[0:])))
	id = recordID{producer: binary.BigEndian.Uint32(v[8:]), seq: binary.BigEndian.Uint64(v[12:])}
	return t, id, nil
}
