package quic

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

// rawFrame is a frame of type 1 whose body is n bytes of a pattern.
func rawFrame(n int) []byte {
	b := make([]byte, frameHeaderLen+n)
	binary.BigEndian.PutUint32(b, uint32(n+1))
	b[4] = 1
	for i := range n {
		b[frameHeaderLen+i] = byte(i * 7)
	}
	return b
}

// packetReader hands out its bytes a QUIC packet's worth at a time.
type packetReader struct{ data []byte }

func (r *packetReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.data[:min(len(r.data), 1200)])
	r.data = r.data[n:]
	return n, nil
}

func TestReadBodyAllocatesOnceWithinTheBudget(t *testing.T) {
	const n = 600 << 10
	in := rawFrame(n)
	for _, tc := range []struct {
		name   string
		budget *bodyBudget
		allocs float64 // at most
	}{
		{"budget", newBodyBudget(defaultBodyBudget), 1},
		{"no budget", nil, 5}, // 64 KiB, 128, 256, 512, 600: each step copies what came before
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got Frame
			read := func(in []byte) float64 {
				return testing.AllocsPerRun(20, func() {
					fr := frameReader{r: &packetReader{data: in}, maxFrame: DefaultMaxFrameSize, bodies: tc.budget, buf: make([]byte, 0, 4096)}
					f, err := fr.next()
					if err != nil {
						t.Fatal(err)
					}
					got = f
				})
			}
			// What reading a frame costs besides its body's buffer: the
			// reader, the 4 KiB starting buffer.
			base := read(rawFrame(1000))
			allocs := read(in) - base
			if allocs > tc.allocs || allocs < 1 {
				t.Errorf("%v allocations for the body, want 1 to %v", allocs, tc.allocs)
			}
			if !bytes.Equal(got.Body, in[frameHeaderLen:]) {
				t.Fatal("body differs from what was sent")
			}
			if tc.budget != nil && tc.budget.avail.Load() != defaultBodyBudget {
				t.Fatalf("budget holds %d after the frame, want all %d back", tc.budget.avail.Load(), defaultBodyBudget)
			}
		})
	}
}

func TestBodyBudgetComesBackAfterATruncatedFrame(t *testing.T) {
	in := append([]byte{0, 0x20, 0, 0, 1}, make([]byte, 100)...) // announces 2 MiB, sends 100 B
	bb := newBodyBudget(defaultBodyBudget)
	fr := frameReader{r: &trickleReader{data: in}, maxFrame: DefaultMaxFrameSize, bodies: bb}
	if _, err := fr.next(); !errors.Is(err, ErrMalformed) {
		t.Fatalf("got %v, want ErrMalformed", err)
	}
	if got := bb.avail.Load(); got != defaultBodyBudget {
		t.Fatalf("budget holds %d after a failed read, want %d", got, defaultBodyBudget)
	}
	if fr.buf != nil {
		t.Fatalf("a failed read kept a %d-byte buffer", cap(fr.buf))
	}
}

// A peer announcing frames it never sends ties up at most the budget; other
// frames then grow as their bytes arrive, and arrive whole.
func TestBodyBudgetExhaustedFallsBackToGrowing(t *testing.T) {
	bb := newBodyBudget(1 << 20)
	pr, pw := io.Pipe()
	defer pw.Close()
	held := make(chan error, 1)
	go func() {
		fr := frameReader{r: pr, maxFrame: DefaultMaxFrameSize, bodies: bb}
		_, err := fr.next()
		held <- err
	}()
	// Announce a body that takes the whole budget (bodyCap rounds 900 KiB up
	// to 960 KiB), send a little, then stall.
	hdr := rawFrame(900 << 10)[:frameHeaderLen+10]
	if _, err := pw.Write(hdr); err != nil {
		t.Fatal(err)
	}
	if got := bb.avail.Load(); got != int64(1<<20-bodyCap(900<<10, DefaultMaxFrameSize)) {
		t.Fatalf("budget holds %d while a frame is announced", got)
	}

	in := rawFrame(300 << 10)
	fr := frameReader{r: &packetReader{data: in}, maxFrame: DefaultMaxFrameSize, bodies: bb}
	f, err := fr.next()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(f.Body, in[frameHeaderLen:]) {
		t.Fatal("body differs from what was sent")
	}

	pw.CloseWithError(io.ErrUnexpectedEOF)
	if err := <-held; err == nil {
		t.Fatal("the stalled frame was read whole")
	}
	if got := bb.avail.Load(); got != 1<<20 {
		t.Fatalf("budget holds %d after the stalled frame failed, want %d", got, 1<<20)
	}
}

func TestBodyCap(t *testing.T) {
	for _, tc := range []struct{ n, limit, want int }{
		{growChunk + 1, DefaultMaxFrameSize, 2 * growChunk},
		{600 << 10, DefaultMaxFrameSize, 640 << 10},
		{(7 << 20) + 1, DefaultMaxFrameSize, 7<<20 + 512<<10},
		{DefaultMaxFrameSize - 1, DefaultMaxFrameSize, DefaultMaxFrameSize},
		{1000, 1000, 1000},
	} {
		if got := bodyCap(tc.n, tc.limit); got != tc.want {
			t.Errorf("bodyCap(%d, %d) = %d, want %d", tc.n, tc.limit, got, tc.want)
		}
	}
}
