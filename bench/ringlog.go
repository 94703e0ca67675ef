package bench

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"time"
)

// ringLog keeps the bench's own debug log (its clients' retries, metadata
// watches, leader changes) in memory, the last ringLogLines lines, so that
// a slow trial's evidence (slowtrial.go) holds the client's side of it too,
// whatever --log-level prints.
type ringLog struct {
	mu    sync.Mutex
	lines []ringLine
	next  int // where the next line goes once the ring is full
}

type ringLine struct {
	at   time.Time
	text []byte
}

// ringLogLines bounds the ring (a failover trial logs tens of lines).
const ringLogLines = 20000

// since returns the lines logged at or after t, oldest first.
func (l *ringLog) since(t time.Time) []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []byte
	n := len(l.lines)
	for i := range n {
		ln := l.lines[(l.next+i)%n]
		if !ln.at.Before(t) {
			out = append(out, ln.text...)
		}
	}
	return out
}

func (l *ringLog) add(at time.Time, text []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) < ringLogLines {
		l.lines = append(l.lines, ringLine{at, text})
		return
	}
	l.lines[l.next] = ringLine{at, text}
	l.next = (l.next + 1) % ringLogLines
}

// teeHandler passes every record to out (when out takes its level) and
// every debug-or-above record to the ring, formatted as slog's text.
type teeHandler struct {
	out  slog.Handler
	ring *ringLog
	// text formats into buf for the ring; attrs and groups live in it.
	text slog.Handler
	buf  *lockedBuf
}

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func newTeeHandler(out slog.Handler, ring *ringLog) *teeHandler {
	buf := &lockedBuf{}
	return &teeHandler{out: out, ring: ring, buf: buf,
		text: slog.NewTextHandler(&buf.b, &slog.HandlerOptions{Level: slog.LevelDebug})}
}

func (h *teeHandler) Enabled(ctx context.Context, lv slog.Level) bool {
	return lv >= slog.LevelDebug || h.out.Enabled(ctx, lv)
}

func (h *teeHandler) Handle(ctx context.Context, r slog.Record) error {
	h.buf.mu.Lock()
	h.buf.b.Reset()
	_ = h.text.Handle(ctx, r)
	line := bytes.Clone(h.buf.b.Bytes())
	h.buf.mu.Unlock()
	h.ring.add(r.Time, line)
	if h.out.Enabled(ctx, r.Level) {
		return h.out.Handle(ctx, r)
	}
	return nil
}

func (h *teeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &teeHandler{out: h.out.WithAttrs(as), ring: h.ring, text: h.text.WithAttrs(as), buf: h.buf}
}

func (h *teeHandler) WithGroup(name string) slog.Handler {
	return &teeHandler{out: h.out.WithGroup(name), ring: h.ring, text: h.text.WithGroup(name), buf: h.buf}
}
