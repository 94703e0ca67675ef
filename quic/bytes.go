package quic

import (
	"io"

	"github.com/vmihailenco/msgpack/v5"
)

// Bytes is a byte-string message field (record batches) that the transport
// moves without copying where it can. On the wire it is an ordinary msgpack
// bin (a nil Bytes is msgpack nil), so a Bytes field and a []byte field with
// the same tag read each other's encoding.
//
//   - Encoding: when a message is encoded for Call, CallRaw, Session.Send,
//     OpenSession or a unary response, a Bytes of at least [OutOfLineBytes]
//     is not copied into the frame buffer; the stream write reads it from its
//     backing array. The array must not change until that call returns (for
//     a unary response: until [Reply.Done] runs). Any other encoder
//     (msgpack.Marshal) copies it as usual.
//   - Decoding: [Frame.DecodeNoCopy] makes a Bytes alias the frame's Body, so
//     it is valid exactly as long as Body is (a unary request: until the
//     response is written; a session frame: until the next Recv).
//     [Frame.Decode] and other decoders make a fresh copy.
//
// A Bytes inside a value decoded with msgpack's DecodeRaw is not recorded in
// the raw message; no message does that.
type Bytes []byte

// OutOfLineBytes is the size from which an encoded Bytes is written from its
// own array instead of being copied into the frame buffer (below it, one copy
// is cheaper than an extra stream write).
const OutOfLineBytes = 16 << 10

// EncodeMsgpack implements msgpack.CustomEncoder.
func (b Bytes) EncodeMsgpack(enc *msgpack.Encoder) error {
	if b == nil {
		return enc.EncodeNil()
	}
	if w, ok := enc.Writer().(*encoder); ok && len(b) >= OutOfLineBytes {
		if err := enc.EncodeBytesLen(len(b)); err != nil {
			return err
		}
		w.outOfLine(b)
		return nil
	}
	return enc.EncodeBytes(b)
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (b *Bytes) DecodeMsgpack(dec *msgpack.Decoder) error {
	n, err := dec.DecodeBytesLen()
	if err != nil {
		return err
	}
	if n < 0 {
		*b = nil
		return nil
	}
	if r, ok := dec.Buffered().(*bodyReader); ok {
		p, err := r.take(n)
		if err != nil {
			return err
		}
		if !r.alias {
			p = append(make([]byte, 0, n), p...)
		}
		*b = p
		return nil
	}
	// Another decoder: its input's length is not known to bound n, so grow
	// as bytes arrive rather than trusting n for the allocation.
	p := make([]byte, 0, min(n, growChunk))
	for len(p) < n {
		if len(p) == cap(p) {
			p = append(p, make([]byte, min(n, 2*cap(p))-len(p))...)[:len(p)]
		}
		m := len(p)
		p = p[:min(cap(p), n)]
		if err := dec.ReadFull(p[m:]); err != nil {
			return err
		}
	}
	*b = p
	return nil
}

// bodyReader is the msgpack decoder's input: a frame body that Bytes fields
// may alias (alias set) or copy from.
type bodyReader struct {
	b     []byte
	i     int
	alias bool
}

func (r *bodyReader) reset(b []byte, alias bool) { r.b, r.i, r.alias = b, 0, alias }

func (r *bodyReader) Read(p []byte) (int, error) {
	if r.i >= len(r.b) {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	n := copy(p, r.b[r.i:])
	r.i += n
	return n, nil
}

func (r *bodyReader) ReadByte() (byte, error) {
	if r.i >= len(r.b) {
		return 0, io.EOF
	}
	c := r.b[r.i]
	r.i++
	return c, nil
}

func (r *bodyReader) UnreadByte() error {
	if r.i <= 0 {
		return io.ErrNoProgress
	}
	r.i--
	return nil
}

// take returns the next n bytes without copying.
func (r *bodyReader) take(n int) ([]byte, error) {
	if n > len(r.b)-r.i {
		return nil, io.ErrUnexpectedEOF
	}
	p := r.b[r.i : r.i+n : r.i+n]
	r.i += n
	return p, nil
}
