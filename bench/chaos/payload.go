package chaos

import (
	"bytes"
	"fmt"
	"strconv"
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
