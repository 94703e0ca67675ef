package quic

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// ALPN is the only protocol spoken.
const ALPN = "paymentlog/1"

// FrameType selects a handler (first frame of a stream) or a message kind.
// Types 0xF0–0xFF are reserved for the transport itself (errors, close).
type FrameType uint8

// FrameError is the reserved frame type carrying an error: body
// {"code": uint16, "msg": string}. 0xFE is the liveness probe (see
// reconnect.go); types 0xF0-0xFD are reserved and unused.
const FrameError FrameType = 0xFF

// firstReserved is the lowest frame type reserved for the transport.
const firstReserved FrameType = 0xF0

// Reserved reports whether t belongs to the transport (0xF0-0xFF).
func (t FrameType) Reserved() bool { return t >= firstReserved }

// frameHeaderLen is the length prefix plus the type byte.
const frameHeaderLen = 5

// Defaults.
const (
	DefaultMaxFrameSize = 16 << 20
	DefaultMaxListItems = 1 << 20
)

// Frame is one received frame. Body aliases an internal buffer valid until the
// next Recv on the same stream; Decode copies what it keeps.
type Frame struct {
	Type FrameType
	Body []byte

	// maxItems bounds list elements and map entries for Decode; 0 means
	// DefaultMaxListItems. Set from the endpoint's Config by the reader.
	maxItems int
	// budget, shared by an endpoint's frames, bounds the elements being
	// decoded at once; nil means no bound.
	budget *decodeBudget
}

// growChunk is the first allocation for a body that does not fit the
// reader's buffer; the buffer then doubles as bytes arrive.
const growChunk = 64 << 10

// frameReader reads frames from one stream, reusing its buffer.
type frameReader struct {
	r        io.Reader
	maxFrame int
	maxItems int
	budget   *decodeBudget
	bodies   *bodyBudget // nil: grow only as bytes arrive
	hdr      [frameHeaderLen]byte
	buf      []byte
}

// next reads one frame. It returns io.EOF when the stream ended cleanly at a
// frame boundary, an error wrapping ErrMalformed for a truncated or zero-length
// frame, one wrapping ErrFrameTooLarge when the length prefix exceeds the
// limit (nothing is allocated for it), and the reader's error otherwise. The
// returned Body aliases the reader's buffer until the next call.
func (fr *frameReader) next() (Frame, error) {
	n, err := io.ReadFull(fr.r, fr.hdr[:])
	if err != nil {
		if err == io.EOF {
			return Frame{}, io.EOF
		}
		if err == io.ErrUnexpectedEOF {
			return Frame{}, fmt.Errorf("%w: truncated frame header (%d of %d bytes)", ErrMalformed, n, frameHeaderLen)
		}
		return Frame{}, err
	}
	length := binary.BigEndian.Uint32(fr.hdr[:4])
	t := FrameType(fr.hdr[4])
	if length == 0 {
		return Frame{}, fmt.Errorf("%w: zero frame length", ErrMalformed)
	}
	if uint64(length) > uint64(fr.maxFrame) {
		return Frame{}, &FrameTooLargeError{Size: uint64(length), Limit: fr.maxFrame}
	}
	body, err := fr.readBody(int(length) - 1)
	if err != nil {
		return Frame{}, err
	}
	return Frame{Type: t, Body: body, maxItems: fr.maxItems, budget: fr.budget}, nil
}

// readBody reads n bytes into the reader's buffer. A buffer too small is
// replaced by one of the whole length when the endpoint's body budget has
// room for it (see bodyBudget; a body of up to growChunk takes one
// allocation either way); otherwise it grows only as bytes arrive, so
// that a peer's length prefix alone never allocates more than growChunk.
func (fr *frameReader) readBody(n int) ([]byte, error) {
	if n > cap(fr.buf) && n > growChunk {
		if c := bodyCap(n, fr.maxFrame); fr.bodies.take(c) {
			b := make([]byte, n, c)
			got, err := io.ReadFull(fr.r, b)
			fr.bodies.give(c)
			if err != nil {
				return nil, truncated(err, got, n)
			}
			fr.buf = b
			return b, nil
		}
	}
	if n <= cap(fr.buf) {
		b := fr.buf[:n]
		if got, err := io.ReadFull(fr.r, b); err != nil {
			return nil, truncated(err, got, n)
		}
		return b, nil
	}
	b := fr.buf[:0]
	for len(b) < n {
		if len(b) == cap(b) {
			c := min(max(2*cap(b), growChunk), n)
			nb := make([]byte, len(b), c)
			copy(nb, b)
			b = nb
			fr.buf = nb
		}
		m, err := fr.r.Read(b[len(b):cap(b)])
		b = b[:len(b)+m]
		if err != nil && !(err == io.EOF && len(b) == n) {
			return nil, truncated(err, len(b), n)
		}
	}
	return b, nil
}

func truncated(err error, got, want int) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("%w: truncated frame body (%d of %d bytes)", ErrMalformed, got, want)
	}
	return err
}

// FrameTooLargeError reports a length prefix above the limit. It matches
// ErrFrameTooLarge with errors.Is.
type FrameTooLargeError struct {
	Size  uint64 // the announced (or encoded) frame length
	Limit int
}

func (e *FrameTooLargeError) Error() string {
	return fmt.Sprintf("quic: frame too large: %d bytes, limit %d", e.Size, e.Limit)
}

// Is makes errors.Is(err, ErrFrameTooLarge) true.
func (e *FrameTooLargeError) Is(target error) bool { return target == ErrFrameTooLarge }

// putHeader writes the length prefix and type into b[:5] for a body of n bytes.
func putHeader(b []byte, t FrameType, n int) {
	binary.BigEndian.PutUint32(b, uint32(n+1))
	b[4] = byte(t)
}

// checkFrameSize reports whether a body of n bytes fits in a frame.
func checkFrameSize(n, maxFrame int) error {
	if n+1 > maxFrame {
		return &FrameTooLargeError{Size: uint64(n + 1), Limit: maxFrame}
	}
	return nil
}

// errIsEOF reports whether err is a clean end of stream.
func errIsEOF(err error) bool { return errors.Is(err, io.EOF) }
