package wire

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// FuzzBytesPlainMsgpack: a Bytes field decoded by a plain msgpack decoder
// (no transport hooks: its input's length is unknown, so the announced bin
// length must not size the allocation) never panics, fails when the bytes
// run out, and otherwise agrees with []byte. The input is {"d": bin32 of
// announced length} followed by data.
func FuzzBytesPlainMsgpack(f *testing.F) {
	type withBytes struct {
		D Bytes `msgpack:"d"`
	}
	type withSlice struct {
		D []byte `msgpack:"d"`
	}
	f.Add(uint32(5), []byte("batch"))
	f.Add(uint32(0), []byte{})
	f.Add(uint32(growChunk+1), make([]byte, growChunk+1))
	f.Add(uint32(0x7fffffff), []byte{1, 2})
	f.Add(uint32(3*growChunk), make([]byte, 2*growChunk+5))
	f.Fuzz(func(t *testing.T, n uint32, data []byte) {
		in := []byte{0x81, 0xa1, 'd', 0xc6}
		in = binary.BigEndian.AppendUint32(in, n)
		in = append(in, data...)
		var a withBytes
		errA := msgpack.Unmarshal(in, &a)
		if int64(n) > int64(len(data)) {
			if errA == nil {
				t.Fatalf("bin of %d bytes with %d present decoded", n, len(data))
			}
			return
		}
		var b withSlice
		errB := msgpack.Unmarshal(in, &b)
		if (errA == nil) != (errB == nil) {
			t.Fatalf("Bytes: %v, []byte: %v", errA, errB)
		}
		if errA == nil && (!bytes.Equal(a.D, b.D) || a.D == nil) {
			t.Fatalf("Bytes %d bytes (nil %v), []byte %d bytes", len(a.D), a.D == nil, len(b.D))
		}
	})
}
