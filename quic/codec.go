package quic

import (
	"errors"
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
// Everything decoded is a copy: v keeps nothing of Body.
func (f Frame) Decode(v any) error { return f.decode(v, false) }

// DecodeNoCopy is Decode, except that byte-string fields that use the
// transport's hooks (wire.Bytes) alias Body instead of being copied: they
// are valid only as long as Body is.
func (f Frame) DecodeNoCopy(v any) error { return f.decode(v, true) }

func (f Frame) decode(v any, alias bool) error {
	maxItems := f.maxItems
	if maxItems <= 0 {
		maxItems = DefaultMaxListItems
	}
	items, err := countMsgpack(f.Body, maxItems)
	if err != nil {
		return fmt.Errorf("%w: frame type %d: %v", ErrMalformed, f.Type, err)
	}
	taken := f.budget.acquire(items)
	defer f.budget.release(taken)
	d := decoderPool.Get().(*decoder)
	d.r.reset(f.Body, alias)
	d.dec.Reset(&d.r)
	d.dec.UseLooseInterfaceDecoding(true)
	err = d.dec.Decode(v)
	d.r.reset(nil, false)
	d.dec.Reset(nil)
	decoderPool.Put(d)
	if err != nil {
		return fmt.Errorf("%w: frame type %d into %T: %v", ErrMalformed, f.Type, v, err)
	}
	return nil
}

// decodeBudget bounds the list elements and map entries being decoded at
// once by all the frames of one endpoint. Decoding turns each element (one
// byte on the wire at least) into a whole Go value, tens of bytes for a
// struct, and msgpack allocates a list's elements before decoding them: a
// frame of MaxListItems elements costs up to ~100 MiB while it decodes, and
// a peer can have MaxIncomingStreams frames decoding per connection. With
// the budget, the frames decoding at once hold at most its capacity
// (MaxListItems) elements, plus fewer than budgetExempt per frame: small
// frames, the usual case, never wait. Waiting is bounded: the budget is
// held only while decoding, which never blocks on anything else, and it is
// granted first come, first served, so a large decode waits only for the
// decodes ahead of it, never for an endless stream of smaller ones that
// would each fit in what is free (a hostile peer's, say).
type decodeBudget struct {
	max int
	mu  struct {
		sync.Mutex
		avail   int
		waiting []*budgetWaiter // in arrival order; the first is served first
	}
}

// budgetWaiter is one acquire waiting for n elements; ready is closed once
// they are its.
type budgetWaiter struct {
	n     int
	ready chan struct{}
}

// budgetExempt is the element count below which a decode takes no budget.
const budgetExempt = 1024

func newDecodeBudget(n int) *decodeBudget {
	b := &decodeBudget{max: n}
	b.mu.avail = n
	return b
}

// acquire waits until n elements (at most the capacity) are free and no
// earlier acquire is waiting, and takes them; it returns what it took, for
// release. A nil budget takes nothing.
func (b *decodeBudget) acquire(n int) int {
	if b == nil || n < budgetExempt {
		return 0
	}
	n = min(n, b.max)
	b.mu.Lock()
	if len(b.mu.waiting) == 0 && b.mu.avail >= n {
		b.mu.avail -= n
		b.mu.Unlock()
		return n
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	b.mu.waiting = append(b.mu.waiting, w)
	b.mu.Unlock()
	<-w.ready
	return n
}

func (b *decodeBudget) release(n int) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.mu.avail += n
	b.grantLocked()
	b.mu.Unlock()
}

// grantLocked hands free elements to the waiters in order, stopping at the
// first that does not fit.
func (b *decodeBudget) grantLocked() {
	for len(b.mu.waiting) > 0 && b.mu.waiting[0].n <= b.mu.avail {
		w := b.mu.waiting[0]
		b.mu.waiting[0] = nil
		b.mu.waiting = b.mu.waiting[1:]
		b.mu.avail -= w.n
		close(w.ready)
	}
}

// queued is the number of acquires waiting (tests).
func (b *decodeBudget) queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.mu.waiting)
}

type decoder struct {
	r   bodyReader
	dec *msgpack.Decoder
}

var decoderPool = sync.Pool{New: func() any {
	d := &decoder{}
	d.dec = msgpack.NewDecoder(&d.r)
	return d
}}

// encoder builds whole frames (header + msgpack body) in one reusable buffer,
// so a Send costs one copy of its payload (into buf) before the stream write;
// large byte-string fields (wire.Bytes) and Raw bodies are not copied but written from their
// own arrays (out of line).
type encoder struct {
	buf []byte
	enc *msgpack.Encoder
	// ext are the out-of-line byte strings, in order; each belongs after
	// buf[:at]. extLen is their total length.
	ext    []extChunk
	extLen int
	parts  [][]byte // what frameParts returns, reused
	// limit, when positive, bounds len(buf)+extLen while encoding: Write
	// fails past it, so a value too large for a frame is abandoned as soon
	// as it outgrows the frame instead of being encoded whole first.
	limit int
	over  int // the length Write refused, when it did
}

// errFrameFull is Write's error once the frame limit is reached.
var errFrameFull = errors.New("quic: frame full")

type extChunk struct {
	at   int
	data []byte
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
	e.resetExt()
	encoderPool.Put(e)
}

// resetExt forgets the out-of-line chunks (dropping references to them).
func (e *encoder) resetExt() {
	clear(e.ext)
	e.ext = e.ext[:0]
	e.extLen = 0
	clear(e.parts)
	e.parts = e.parts[:0]
}

// Write and WriteByte make encoder the msgpack.Encoder's writer.
func (e *encoder) Write(p []byte) (int, error) {
	if e.limit > 0 && len(e.buf)+e.extLen+len(p) > e.limit {
		e.over = len(e.buf) + e.extLen + len(p)
		return 0, errFrameFull
	}
	e.buf = append(e.buf, p...)
	return len(p), nil
}

func (e *encoder) WriteByte(c byte) error {
	if e.limit > 0 && len(e.buf)+e.extLen+1 > e.limit {
		e.over = len(e.buf) + e.extLen + 1
		return errFrameFull
	}
	e.buf = append(e.buf, c)
	return nil
}

// TakesOutOfLine and WriteOutOfLine are the hooks through which byte-string
// fields (wire.Bytes) of at least OutOfLineBytes skip the copy into buf.
func (e *encoder) TakesOutOfLine(n int) bool { return n >= OutOfLineBytes }

// WriteOutOfLine adds p to the body at the current position without copying it.
func (e *encoder) WriteOutOfLine(p []byte) {
	e.ext = append(e.ext, extChunk{at: len(e.buf), data: p})
	e.extLen += len(p)
}

// frame encodes v as a whole frame of type t and returns the bytes (valid
// until the encoder is reused), copying any out-of-line chunk in. A Raw v is
// copied verbatim.
func (e *encoder) frame(t FrameType, v any, maxFrame int) ([]byte, error) {
	parts, err := e.frameParts(t, v, maxFrame)
	if err != nil {
		return nil, err
	}
	if len(parts) == 1 {
		return parts[0], nil
	}
	out := make([]byte, 0, frameHeaderLen+len(e.buf)+e.extLen)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out, nil
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

// frameParts encodes a frame as a list of byte slices to write in order: the
// header and msgpack bytes from the encoder's buffer, interleaved with
// out-of-line chunks (large wire.Bytes fields, a large Raw body) written from
// their own arrays. The slices are valid until the encoder is reused.
func (e *encoder) frameParts(t FrameType, v any, maxFrame int) ([][]byte, error) {
	e.resetExt()
	e.buf = append(e.buf[:0], 0, 0, 0, 0, 0)
	if raw, ok := v.(Raw); ok {
		if len(raw) > rawInline {
			e.WriteOutOfLine(raw)
		} else {
			e.buf = append(e.buf, raw...)
		}
	} else {
		// A whole frame is header + body, the body at most maxFrame-1.
		e.limit, e.over = frameHeaderLen+maxFrame-1, 0
		err := e.enc.Encode(v)
		e.limit = 0
		// Checked on over, not only err: a refused write must never leave a
		// truncated body behind, even if an encoder path ignored its error.
		if e.over > 0 || errors.Is(err, errFrameFull) {
			// Encoding stopped at the limit: the size reported is a lower bound.
			size := e.over - frameHeaderLen + 1
			e.resetExt()
			return nil, &FrameTooLargeError{Size: uint64(size), Limit: maxFrame}
		}
		if err != nil {
			e.resetExt()
			return nil, fmt.Errorf("quic: encode %T as frame type %d: %w", v, t, err)
		}
	}
	n := len(e.buf) - frameHeaderLen + e.extLen
	if err := checkFrameSize(n, maxFrame); err != nil {
		e.resetExt()
		return nil, err
	}
	putHeader(e.buf, t, n)
	from := 0
	for _, c := range e.ext {
		if c.at > from {
			e.parts = append(e.parts, e.buf[from:c.at])
		}
		e.parts = append(e.parts, c.data)
		from = c.at
	}
	if from < len(e.buf) {
		e.parts = append(e.parts, e.buf[from:])
	}
	return e.parts, nil
}

// writeParts writes a frame's parts in order (joined when small: joinParts).
func writeParts(w io.Writer, parts [][]byte) error {
	parts, j := joinParts(parts)
	defer j.release()
	for _, p := range parts {
		if len(p) == 0 {
			continue
		}
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return nil
}
