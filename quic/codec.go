package quic

import (
	"bytes"
	"fmt"
	"io"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
)

// Raw is a pre-encoded msgpack body. Passed as a unary response or to
// Session.Send it is written verbatim, without re-encoding or copying.
type Raw []byte

// Decode checks every length in the msgpack body against the frame's size and
// the list-item limit before allocating anything, then decodes into v.
// Unknown struct fields are skipped (messages may gain fields); numbers decoded
// into interface{} become int64, uint64 or float64. Errors wrap ErrMalformed.
func (f Frame) Decode(v any) error {
	maxItems := f.maxItems
	if maxItems <= 0 {
		maxItems = DefaultMaxListItems
	}
	if err := checkMsgpack(f.Body, maxItems); err != nil {
		return fmt.Errorf("%w: frame type %d: %v", ErrMalformed, f.Type, err)
	}
	d := decoderPool.Get().(*decoder)
	d.r.Reset(f.Body)
	d.dec.Reset(&d.r)
	d.dec.UseLooseInterfaceDecoding(true)
	err := d.dec.Decode(v)
	d.r.Reset(nil)
	d.dec.Reset(nil)
	decoderPool.Put(d)
	if err != nil {
		return fmt.Errorf("%w: frame type %d into %T: %v", ErrMalformed, f.Type, v, err)
	}
	return nil
}

type decoder struct {
	r   bytes.Reader
	dec *msgpack.Decoder
}

var decoderPool = sync.Pool{New: func() any {
	d := &decoder{}
	d.dec = msgpack.NewDecoder(&d.r)
	return d
}}

// encoder builds whole frames (header + msgpack body) in one reusable buffer,
// so a Send costs one copy of its payload (into buf) before the stream write.
type encoder struct {
	buf []byte
	enc *msgpack.Encoder
}

// maxPooledEncoder caps the buffer kept in the pool; larger ones are dropped.
const maxPooledEncoder = 8 << 20

var encoderPool = sync.Pool{New: func() any {
	e := &encoder{buf: make([]byte, 0, 4096)}
	e.enc = msgpack.NewEncoder(e)
	e.enc.UseCompactInts(true)
	return e
}}

func getEncoder() *encoder { return encoderPool.Get().(*encoder) }

func putEncoder(e *encoder) {
	if cap(e.buf) > maxPooledEncoder {
		return
	}
	e.buf = e.buf[:0]
	encoderPool.Put(e)
}

// Write and WriteByte make encoder the msgpack.Encoder's writer.
func (e *encoder) Write(p []byte) (int, error) {
	e.buf = append(e.buf, p...)
	return len(p), nil
}

func (e *encoder) WriteByte(c byte) error {
	e.buf = append(e.buf, c)
	return nil
}

// frame encodes v as a whole frame of type t and returns the bytes (valid
// until the encoder is reused). A Raw v is copied verbatim.
func (e *encoder) frame(t FrameType, v any, maxFrame int) ([]byte, error) {
	e.buf = append(e.buf[:0], 0, 0, 0, 0, 0)
	if raw, ok := v.(Raw); ok {
		e.buf = append(e.buf, raw...)
	} else if err := e.enc.Encode(v); err != nil {
		return nil, fmt.Errorf("quic: encode %T as frame type %d: %w", v, t, err)
	}
	n := len(e.buf) - frameHeaderLen
	if err := checkFrameSize(n, maxFrame); err != nil {
		return nil, err
	}
	putHeader(e.buf, t, n)
	return e.buf, nil
}

// errorBody is the body of a FrameError frame.
type errorBody struct {
	Code    uint16 `msgpack:"code"`
	Message string `msgpack:"msg"`
}

// maxErrorMessage bounds the message carried in an error frame.
const maxErrorMessage = 1024

func encodeErrorFrame(code uint16, msg string) []byte {
	if len(msg) > maxErrorMessage {
		msg = msg[:maxErrorMessage]
	}
	e := getEncoder()
	b, err := e.frame(FrameError, errorBody{Code: code, Message: msg}, DefaultMaxFrameSize)
	if err != nil {
		panic("quic: encoding an error frame failed: " + err.Error()) // our own invariant
	}
	out := append([]byte(nil), b...)
	putEncoder(e)
	return out
}

// rawInline is the size below which a Raw body is copied next to its header
// (one stream write); larger bodies are written in place after the header.
const rawInline = 64 << 10

// frameParts encodes a frame as a header-and-body head plus, for a large Raw
// body, the body itself as tail (written without copying).
func (e *encoder) frameParts(t FrameType, v any, maxFrame int) (head, tail []byte, err error) {
	if raw, ok := v.(Raw); ok && len(raw) > rawInline {
		if err := checkFrameSize(len(raw), maxFrame); err != nil {
			return nil, nil, err
		}
		e.buf = append(e.buf[:0], 0, 0, 0, 0, 0)
		putHeader(e.buf, t, len(raw))
		return e.buf, raw, nil
	}
	b, err := e.frame(t, v, maxFrame)
	return b, nil, err
}

// writeParts writes head then tail (if any).
func writeParts(w io.Writer, head, tail []byte) error {
	if _, err := w.Write(head); err != nil {
		return err
	}
	if len(tail) > 0 {
		if _, err := w.Write(tail); err != nil {
			return err
		}
	}
	return nil
}
