package quic

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// FuzzFrameReader feeds arbitrary stream bytes to the frame reader: it must
// never panic, never return a body above the limit or longer than the input,
// and end with io.EOF, ErrMalformed or ErrFrameTooLarge. Every frame it
// returns is also decoded, which must fail cleanly or succeed.
func FuzzFrameReader(f *testing.F) {
	f.Add([]byte{0, 0, 0, 2, 1, 0xc0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1})
	f.Add([]byte{0, 0, 0, 6, 1, 0xdd, 0x80, 0, 0, 0})
	f.Add([]byte{0, 0, 0, 0, 1})
	f.Add(append([]byte{0, 0, 0, 9, 3}, []byte{0x82, 0xa1, 'n', 5, 0xa1, 's', 0xa2, 'h', 'i'}...))
	const limit = 1 << 16
	f.Fuzz(func(t *testing.T, data []byte) {
		fr := frameReader{r: bytes.NewReader(data), maxFrame: limit, maxItems: 1 << 12}
		total := 0
		for {
			fr0, err := fr.next()
			if err != nil {
				if err != io.EOF && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrFrameTooLarge) {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			total += frameHeaderLen + len(fr0.Body)
			if len(fr0.Body)+1 > limit || total > len(data) {
				t.Fatalf("body of %d bytes (total %d of %d input)", len(fr0.Body), total, len(data))
			}
			var m echoMsg
			_ = fr0.Decode(&m)
			var v any
			_ = fr0.Decode(&v)
		}
	})
}

// FuzzFrameReaderBudget reads frames of up to 1 MiB through a body budget
// (the first input byte picks its size, from none to several frames) from
// a reader that hands out at most 1200 bytes at a time: whatever the
// stream, every body read is what the stream held, and the whole budget
// comes back.
func FuzzFrameReaderBudget(f *testing.F) {
	f.Add([]byte{3, 0, 0, 0, 2, 1, 0xc0})
	f.Add(append([]byte{1, 0, 2, 0, 0, 1}, make([]byte, 300)...)) // announces 128 KiB, sends 300 B
	f.Add(append([]byte{200, 0, 1, 0, 2, 1}, make([]byte, 1<<16+1)...))
	f.Add([]byte{0, 0xff, 0xff, 0xff, 0xff, 1})
	const limit = 1 << 20
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		budget := int64(data[0]) * 64 << 10
		bb := newBodyBudget(budget)
		stream := data[1:]
		fr := frameReader{r: &packetReader{data: stream}, maxFrame: limit, maxItems: 1 << 12, bodies: bb}
		off := 0
		for {
			fr0, err := fr.next()
			if err != nil {
				if err != io.EOF && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrFrameTooLarge) {
					t.Fatalf("unexpected error %v", err)
				}
				break
			}
			off += frameHeaderLen
			if off+len(fr0.Body) > len(stream) || !bytes.Equal(fr0.Body, stream[off:off+len(fr0.Body)]) {
				t.Fatalf("body of %d bytes at %d differs from the stream (%d bytes)", len(fr0.Body), off, len(stream))
			}
			off += len(fr0.Body)
		}
		if got := bb.avail.Load(); got != budget {
			t.Fatalf("budget %d after reading, want all %d back", got, budget)
		}
	})
}

// FuzzDecode checks the msgpack validator against the decoder: whatever the
// validator accepts must decode without panicking into interface{} and into
// typed targets, and re-encoding a value decoded into interface{} must pass
// the validator again.
func FuzzDecode(f *testing.F) {
	for _, v := range []any{nil, 1, "s", []any{1, "a"}, map[string]any{"n": 1, "data": []byte("x")},
		echoMsg{N: 1, S: "x", Data: []byte{1}}, []echoMsg{{N: 2}}, map[int]any{1: []any{}}} {
		b, _ := msgpack.Marshal(v)
		f.Add(b)
	}
	f.Add([]byte{0xdd, 0x80, 0, 0, 0})
	f.Add([]byte{0x81, 0x90, 1})
	f.Add([]byte{0xd6, 0xff, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, body []byte) {
		fr := Frame{Type: 1, Body: body, maxItems: 1 << 12}
		if checkMsgpack(body, 1<<12) != nil {
			var v any
			if err := fr.Decode(&v); !errors.Is(err, ErrMalformed) {
				t.Fatalf("validator rejected but Decode returned %v", err)
			}
			return
		}
		var v any
		if err := fr.Decode(&v); err == nil {
			b, err := msgpack.Marshal(v)
			if err != nil {
				t.Fatalf("re-encode %#v: %v", v, err)
			}
			if err := checkMsgpack(b, 1<<13); err != nil {
				t.Fatalf("re-encoded value rejected: %v (%x)", err, b)
			}
		}
		var m echoMsg
		_ = fr.Decode(&m)
		var ms []echoMsg
		_ = fr.Decode(&ms)
		var mm map[string][]int32
		_ = fr.Decode(&mm)
		var eb errorBody
		_ = fr.Decode(&eb)
	})
}
