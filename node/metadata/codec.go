package metadata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// recordHeaderLen is type(1) + version(1) + body length(4). Part of the format.
const recordHeaderLen = 6

// Sentinel decode errors.
var (
	ErrCorruptRecord  = errors.New("metadata: corrupt record")
	ErrUnknownRecord  = errors.New("metadata: unknown record type or version")
	ErrInvalidRecords = errors.New("metadata: invalid record")
)

// DecodeError says where in an entry decoding failed.
type DecodeError struct {
	Pos  int        // byte position of the record header in the entry
	Type RecordType // the record type byte, if read
	Err  error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("metadata: decode record %v at byte %d: %v", e.Type, e.Pos, e.Err)
}
func (e *DecodeError) Unwrap() error { return e.Err }

// EncodeRecord appends one encoded record to dst.
func EncodeRecord(dst []byte, r Record) ([]byte, error) {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.SetSortMapKeys(true)
	if err := enc.Encode(r); err != nil {
		return dst, fmt.Errorf("metadata: encode %v: %w", r.Type(), err)
	}
	if buf.Len() > 1<<31 {
		return dst, fmt.Errorf("metadata: encode %v: body too large", r.Type())
	}
	var h [recordHeaderLen]byte
	h[0] = byte(r.Type())
	h[1] = r.Version()
	binary.BigEndian.PutUint32(h[2:], uint32(buf.Len()))
	dst = append(dst, h[:]...)
	return append(dst, buf.Bytes()...), nil
}

// EncodeEntry encodes records as one raft entry (see the package doc).
func EncodeEntry(records ...Record) ([]byte, error) {
	var out []byte
	for _, r := range records {
		var err error
		if out, err = EncodeRecord(out, r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// DecodeEntry decodes every record of an entry. The records returned are
// values (e.g. BrokerFenced, not *BrokerFenced). Bad input yields a
// *DecodeError wrapping ErrCorruptRecord or ErrUnknownRecord.
func DecodeEntry(b []byte) ([]Record, error) {
	var out []Record
	pos := 0
	for pos < len(b) {
		if len(b)-pos < recordHeaderLen {
			return nil, &DecodeError{Pos: pos, Err: fmt.Errorf("%w: truncated header", ErrCorruptRecord)}
		}
		t, v := RecordType(b[pos]), b[pos+1]
		n := binary.BigEndian.Uint32(b[pos+2:])
		if uint64(n) > uint64(len(b)-pos-recordHeaderLen) {
			return nil, &DecodeError{Pos: pos, Type: t, Err: fmt.Errorf("%w: body length %d exceeds the %d bytes left",
				ErrCorruptRecord, n, len(b)-pos-recordHeaderLen)}
		}
		body := b[pos+recordHeaderLen : pos+recordHeaderLen+int(n)]
		r := newRecord(t, v)
		if r == nil {
			return nil, &DecodeError{Pos: pos, Type: t, Err: fmt.Errorf("%w: type %d version %d", ErrUnknownRecord, t, v)}
		}
		if err := unmarshalChecked(body, r); err != nil {
			return nil, &DecodeError{Pos: pos, Type: t, Err: fmt.Errorf("%w: %v", ErrCorruptRecord, err)}
		}
		out = append(out, deref(r))
		pos += recordHeaderLen + int(n)
	}
	return out, nil
}

// unmarshalChecked validates untrusted msgpack before decoding it into v.
func unmarshalChecked(b []byte, v any) error {
	if err := checkMsgpack(b); err != nil {
		return err
	}
	return msgpack.Unmarshal(b, v)
}
