package wire

import (
	"bytes"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// TestBytesPlainMsgpack: without a transport's hooks Bytes encodes and
// decodes like []byte under the same tag (nil stays nil), including strings
// longer than the decoder's first allocation.
func TestBytesPlainMsgpack(t *testing.T) {
	type withBytes struct {
		D Bytes `msgpack:"d"`
	}
	type withSlice struct {
		D []byte `msgpack:"d"`
	}
	big := make([]byte, 3*growChunk+17)
	for i := range big {
		big[i] = byte(i * 7)
	}
	for _, in := range [][]byte{nil, {}, []byte("batch"), big} {
		a, err := msgpack.Marshal(withBytes{D: in})
		if err != nil {
			t.Fatal(err)
		}
		b, err := msgpack.Marshal(withSlice{D: in})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Fatalf("len %d: Bytes encodes differently from []byte", len(in))
		}
		var out withBytes
		if err := msgpack.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.D, in) || (in == nil) != (out.D == nil) {
			t.Fatalf("len %d: decoded %d bytes (nil %v)", len(in), len(out.D), out.D == nil)
		}
	}
	// A length past the end of the input is an error, not a huge allocation.
	var out withBytes
	if err := msgpack.Unmarshal([]byte{0x81, 0xa1, 'd', 0xc6, 0x7f, 0xff, 0xff, 0xff, 1, 2}, &out); err == nil {
		t.Fatal("a truncated bin decoded")
	}
}
