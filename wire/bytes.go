package wire

import "github.com/vmihailenco/msgpack/v5"

// Bytes is a byte-string message field (record batches) that the transport
// moves without copying where it can. On the wire it is an ordinary msgpack
// bin (a nil Bytes is msgpack nil), so a Bytes field and a []byte field with
// the same tag read each other's encoding.
//
// The transport takes part through two optional hooks, found on the msgpack
// encoder's writer and decoder's input (quic's frame encoder and frame body
// implement them; any other encoder or decoder treats Bytes like []byte):
//
//   - Encoding: a writer that implements outOfLineWriter may take a large
//     Bytes by reference and write it to the stream from its own array (for
//     quic: from OutOfLineBytes on, for Call, CallRaw, Session.Send,
//     OpenSession and unary responses). The array must then not change until
//     that call returns (for a unary response: until its Reply.Done runs).
//   - Decoding: an input that implements inPlaceReader hands out the field's
//     bytes itself; quic's Frame.DecodeNoCopy makes them alias the frame's
//     Body (valid exactly as long as Body is), Frame.Decode copies them.
//
// A Bytes inside a value decoded with msgpack's DecodeRaw is not recorded in
// the raw message; no message does that.
type Bytes []byte

// outOfLineWriter is a frame encoder that can send a byte string from the
// caller's array instead of copying it into the frame buffer.
type outOfLineWriter interface {
	// TakesOutOfLine says whether a byte string of n bytes is written out of
	// line; if so the caller writes the bin header, then WriteOutOfLine.
	TakesOutOfLine(n int) bool
	// WriteOutOfLine adds p to the body at the current position by reference.
	WriteOutOfLine(p []byte)
}

// inPlaceReader is a decoder input that knows its remaining length and
// returns the next n bytes itself (aliasing its buffer or copying, as the
// decode asked), or an error if fewer than n remain.
type inPlaceReader interface {
	NextBytes(n int) ([]byte, error)
}

// growChunk is the first allocation for a byte string read from an input
// whose length is unknown; it doubles as bytes arrive.
const growChunk = 64 << 10

// EncodeMsgpack implements msgpack.CustomEncoder.
func (b Bytes) EncodeMsgpack(enc *msgpack.Encoder) error {
	if b == nil {
		return enc.EncodeNil()
	}
	if w, ok := enc.Writer().(outOfLineWriter); ok && w.TakesOutOfLine(len(b)) {
		if err := enc.EncodeBytesLen(len(b)); err != nil {
			return err
		}
		w.WriteOutOfLine(b)
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
	if r, ok := dec.Buffered().(inPlaceReader); ok {
		p, err := r.NextBytes(n)
		if err != nil {
			return err
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
