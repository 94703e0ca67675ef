package quic

import (
	"bytes"
	"errors"
	"io"
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"testing/quick"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

func encodeFrame(t testing.TB, ft FrameType, v any) []byte {
	t.Helper()
	e := getEncoder()
	defer putEncoder(e)
	b, err := e.frame(ft, v, DefaultMaxFrameSize)
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), b...)
}

func TestFrameRoundTrip(t *testing.T) {
	var stream []byte
	msgs := []echoMsg{{N: 1}, {N: -5, S: "x", Data: []byte("abc")}, {Data: make([]byte, 200_000)}}
	for i, m := range msgs {
		stream = append(stream, encodeFrame(t, FrameType(i+1), m)...)
	}
	fr := frameReader{r: bytes.NewReader(stream), maxFrame: DefaultMaxFrameSize}
	for i, want := range msgs {
		f, err := fr.next()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if f.Type != FrameType(i+1) {
			t.Fatalf("frame %d: type %d", i, f.Type)
		}
		var got echoMsg
		if err := f.Decode(&got); err != nil {
			t.Fatal(err)
		}
		if got.N != want.N || got.S != want.S || !bytes.Equal(got.Data, want.Data) {
			t.Fatalf("frame %d: got %+v", i, got.N)
		}
	}
	if _, err := fr.next(); err != io.EOF {
		t.Fatalf("at the end: %v, want io.EOF", err)
	}
}

func TestFrameHeaderLayout(t *testing.T) {
	b := encodeFrame(t, 7, true) // msgpack true = 0xc3
	if want := []byte{0, 0, 0, 2, 7, 0xc3}; !bytes.Equal(b, want) {
		t.Fatalf("frame %x, want %x", b, want)
	}
}

func TestFrameReaderErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		want error
	}{
		{"4 GiB length", []byte{0xff, 0xff, 0xff, 0xff, 1}, ErrFrameTooLarge},
		{"just over the limit", []byte{0, 0, 0x04, 0x01, 1}, ErrFrameTooLarge}, // limit 1024
		{"zero length", []byte{0, 0, 0, 0, 1}, ErrMalformed},
		{"truncated header", []byte{0, 0, 0}, ErrMalformed},
		{"truncated body", []byte{0, 0, 0, 9, 1, 2, 3}, ErrMalformed},
		{"empty", nil, io.EOF},
	} {
		fr := frameReader{r: bytes.NewReader(tc.in), maxFrame: 1024}
		if _, err := fr.next(); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
}

// trickleReader announces a frame then delivers a few bytes and stops.
type trickleReader struct{ data []byte }

func (r *trickleReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.ErrUnexpectedEOF
	}
	n := copy(p, r.data[:min(len(r.data), 7)])
	r.data = r.data[n:]
	return n, nil
}

func TestFrameReaderAllocatesOnlyAsBytesArrive(t *testing.T) {
	in := append([]byte{0, 0xff, 0xff, 0xff, 1}, make([]byte, 100)...) // announces 16 MiB, sends 100 B
	fr := frameReader{r: &trickleReader{data: in}, maxFrame: DefaultMaxFrameSize}
	if _, err := fr.next(); !errors.Is(err, ErrMalformed) {
		t.Fatalf("got %v", err)
	}
	if cap(fr.buf) > growChunk {
		t.Fatalf("buffer grew to %d bytes for 100 received", cap(fr.buf))
	}
}

func TestCheckMsgpackAcceptsEncoderOutput(t *testing.T) {
	type inner struct {
		A []int32          `msgpack:"a"`
		M map[string]int64 `msgpack:"m"`
		T time.Time        `msgpack:"t"`
	}
	values := []any{
		nil, true, false, 0, -1, 127, -32, 255, 65535, math.MaxInt64, math.MinInt64, uint64(math.MaxUint64),
		1.5, float32(2.5), "", "short", strings.Repeat("s", 40), strings.Repeat("s", 300), strings.Repeat("s", 70000),
		[]byte{}, make([]byte, 300), make([]byte, 70000), []any{1, "a", nil}, make([]int, 20), make([]int, 70000),
		map[string]any{"x": 1, "y": []any{map[string]any{}}}, map[int]string{1: "a", -2: "b"},
		inner{A: []int32{1, 2}, M: map[string]int64{"k": 9}, T: time.Unix(1700000000, 5)},
		echoMsg{N: 3, S: "s", Data: []byte("d")}, time.Unix(1, 0),
	}
	for _, v := range values {
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkMsgpack(b, DefaultMaxListItems); err != nil {
			t.Errorf("%T: %v", v, err)
		}
	}
	// Property: whatever the encoder produces for these shapes passes.
	f := func(n int64, s string, b []byte, xs []int16, m map[string]uint32, nested [][]string) bool {
		enc, err := msgpack.Marshal([]any{n, s, b, xs, m, nested})
		return err == nil && checkMsgpack(enc, DefaultMaxListItems) == nil
	}
	if err := quick.Check(f, nil); err != nil {
		t.Fatal(err)
	}
}

func TestCheckMsgpackRejects(t *testing.T) {
	nest := func(n int) []byte { return append(bytes.Repeat([]byte{0x91}, n), 0xc0) }
	for _, tc := range []struct {
		name     string
		in       []byte
		maxItems int
	}{
		{"array32 of 2^31 (#401)", []byte{0xdd, 0x80, 0, 0, 0}, DefaultMaxListItems},
		{"array16 longer than the body", []byte{0xdc, 0, 3, 1, 2}, DefaultMaxListItems},
		{"map16 needs two bytes per entry", []byte{0xde, 0, 2, 0xa0, 1, 0xa0}, DefaultMaxListItems},
		{"bin32 of 4 GiB", []byte{0xc6, 0xff, 0xff, 0xff, 0xff}, DefaultMaxListItems},
		{"str8 past the end", []byte{0xd9, 5, 'a'}, DefaultMaxListItems},
		{"ext32 past the end", []byte{0xc9, 0, 0, 0, 5, 1, 2}, DefaultMaxListItems},
		{"fixext16 truncated", []byte{0xd8, 1, 2, 3}, DefaultMaxListItems},
		{"item budget over one list", []byte{0x93, 1, 2, 3}, 2},
		{"item budget over the frame", []byte{0x92, 0x91, 1, 0x91, 2}, 3},
		{"too deep", nest(maxNesting + 1), DefaultMaxListItems},
		{"array map key", []byte{0x81, 0x90, 1}, DefaultMaxListItems},
		{"bin map key", []byte{0x81, 0xc4, 0, 1}, DefaultMaxListItems},
		{"nil map key", []byte{0x81, 0xc0, 1}, DefaultMaxListItems},
		{"never-used 0xc1", []byte{0xc1}, DefaultMaxListItems},
		{"trailing bytes", []byte{1, 2}, DefaultMaxListItems},
		{"empty", nil, DefaultMaxListItems},
		{"truncated uint64", []byte{0xcf, 1}, DefaultMaxListItems},
	} {
		if err := checkMsgpack(tc.in, tc.maxItems); err == nil {
			t.Errorf("%s: accepted %x", tc.name, tc.in)
		}
	}
	if err := checkMsgpack(nest(maxNesting), DefaultMaxListItems); err != nil {
		t.Errorf("nesting of exactly %d rejected: %v", maxNesting, err)
	}
}

func TestDecodeBombDoesNotAllocate(t *testing.T) {
	bomb := Frame{Type: 1, Body: []byte{0xdd, 0x80, 0, 0, 0}}
	var dst []echoMsg
	allocs := testing.AllocsPerRun(10, func() {
		if err := bomb.Decode(&dst); !errors.Is(err, ErrMalformed) {
			t.Fatalf("got %v", err)
		}
	})
	if allocs > 20 {
		t.Fatalf("%v allocations rejecting a bomb", allocs)
	}
}

func TestDecodeIntoInterfaceIsPredictable(t *testing.T) {
	b, _ := msgpack.Marshal(map[string]any{"i": int8(3), "u": uint16(9), "f": float32(1.5), "s": "x"})
	var v any
	if err := (Frame{Body: b}).Decode(&v); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"i": int64(3), "u": uint64(9), "f": float64(1.5), "s": "x"}
	if !reflect.DeepEqual(v, want) {
		t.Fatalf("got %#v", v)
	}
}

func TestDecodeTolerantOfNewFields(t *testing.T) {
	b, _ := msgpack.Marshal(map[string]any{"n": 5, "future": []any{1, 2}})
	var m echoMsg
	if err := (Frame{Body: b}).Decode(&m); err != nil || m.N != 5 {
		t.Fatalf("%v %+v", err, m)
	}
}

// TestEncodeHotPathAllocations: encoding a frame with a reused encoder does
// not allocate. The encoder is reused directly rather than through
// encoderPool: under the race detector sync.Pool drops items at random, which
// made the count flaky (about 1 run in 20 with -race).
func TestEncodeHotPathAllocations(t *testing.T) {
	payload := echoMsg{N: 1, Data: make([]byte, 64<<10)}
	e := getEncoder()
	defer putEncoder(e)
	_, _ = e.frame(1, payload, DefaultMaxFrameSize)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := e.frame(1, &payload, DefaultMaxFrameSize); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 0 {
		t.Fatalf("%v allocations per encoded frame", allocs)
	}
}

// A value too large for a frame is refused once it outgrows the frame, not
// after encoding all of it: a handler's oversized answer must not cost its
// whole encoding (Metadata for a million names: tens of MB) before failing.
func TestEncodeStopsAtTheFrameLimit(t *testing.T) {
	big := make([]string, 200_000)
	for i := range big {
		big[i] = "a-topic-name-of-30-characters!"
	}
	e := getEncoder()
	defer putEncoder(e)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := e.frameParts(1, big, 64<<10)
	runtime.ReadMemStats(&after)
	var tle *FrameTooLargeError
	if !errors.As(err, &tle) || tle.Limit != 64<<10 || tle.Size <= 64<<10 {
		t.Fatalf("got %v, want a frame-too-large error above the 64 KiB limit", err)
	}
	if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
		t.Fatalf("encoding a 6 MB value into a 64 KiB frame allocated %d KiB before failing", d>>10)
	}
	// The encoder is still usable, and a value that fits still encodes.
	parts, err := e.frameParts(1, big[:10], 64<<10)
	if err != nil || len(parts) != 1 {
		t.Fatalf("small value after a refused one: %v", err)
	}
}
