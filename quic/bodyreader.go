package quic

import "io"

// OutOfLineBytes is the size from which a byte-string field (wire.Bytes) is
// written to the stream from its own array instead of being copied into the
// frame buffer (below it, one copy is cheaper than an extra stream write).
const OutOfLineBytes = 16 << 10

// bodyReader is the msgpack decoder's input: a frame body that byte-string fields (wire.Bytes)
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

// NextBytes returns the next n bytes of the body: a slice of it when the
// decode aliases (Frame.DecodeNoCopy), else a copy. It is the hook through
// which byte-string fields (wire.Bytes) skip msgpack's own copy.
func (r *bodyReader) NextBytes(n int) ([]byte, error) {
	if n < 0 || n > len(r.b)-r.i {
		return nil, io.ErrUnexpectedEOF
	}
	p := r.b[r.i : r.i+n : r.i+n]
	r.i += n
	if !r.alias {
		p = append(make([]byte, 0, n), p...)
	}
	return p, nil
}
