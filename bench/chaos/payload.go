package chaos

import (
	"bytes"
	"fmt"
	"strconv"

	"paymentlog/segment"
)

// RecordID names one record of the workload: producer Producer's Seq-th
// record (both from 0). Every record ever produced has a distinct RecordID.
type RecordID struct {
	Producer int
	Seq      int64
}

func (id RecordID) String() string { return fmt.Sprintf("p%d-%d", id.Producer, id.Seq) }

// Payload is the record value for id: "p<producer>-<seq>", followed, when pad
// > 0, by ':' and pad filler bytes (to make segments roll sooner).
func Payload(id RecordID, pad int) []byte {
	b := fmt.Appendf(nil, "p%d-%d", id.Producer, id.Seq)
	if pad > 0 {
		b = append(b, ':')
		b = append(b, bytes.Repeat([]byte{'.'}, pad)...)
	}
	return b
}

// ParsePayload decodes a value written by Payload.
func ParsePayload(v []byte) (RecordID, bool) {
	if i := bytes.IndexByte(v, ':'); i >= 0 {
		v = v[:i]
	}
	if len(v) < 4 || v[0] != 'p' {
		return RecordID{}, false
	}
	dash := bytes.IndexByte(v, '-')
	if dash < 2 {
		return RecordID{}, false
	}
	p, err1 := strconv.Atoi(string(v[1:dash]))
	s, err2 := strconv.ParseInt(string(v[dash+1:]), 10, 64)
	if err1 != nil || err2 != nil || p < 0 || s < 0 {
		return RecordID{}, false
	}
	return RecordID{Producer: p, Seq: s}, true
}

// HeaderID is the header that names a tombstone (compacted runs): a null
// value cannot carry the record's Payload, so this header carries its
// RecordID ("p<producer>-<seq>") instead.
const HeaderID = "chaos-id"

// keyName is the key of key number n (compacted runs).
func keyName(n int) string { return fmt.Sprintf("k%d", n) }

// storedValue is how the history keeps a record read back: its key ("" for
// none), its value, and whether it is a tombstone (a null value), whose
// value is then its HeaderID header's ("" without one).
func storedValue(key, value []byte, headers []segment.RecordHeader) (k, v string, tombstone bool) {
	if value != nil {
		return string(key), string(value), false
	}
	for _, h := range headers {
		if h.Key == HeaderID {
			return string(key), string(h.Value), true
		}
	}
	return string(key), "", true
}

// recordText is what the checker compares records by: the value alone for
// a record without a key (every record of a run that is not compacted), or
// the key, and the value or "null" with the tombstone's HeaderID.
func recordText(key, value string, tombstone bool) string {
	switch {
	case tombstone:
		return fmt.Sprintf("%s=null[%s]", key, value)
	case key != "":
		return key + "=" + value
	}
	return value
}

func (r LogRecord) text() string { return recordText(r.Key, r.Value, r.Tombstone) }
func (r Read) text() string      { return recordText(r.Key, r.Value, r.Tombstone) }
func (r MemberRead) text() string {
	return recordText(r.Key, r.Value, r.Tombstone)
}
