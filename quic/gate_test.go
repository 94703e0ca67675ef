package quic

import (
	"context"
	"errors"
	"testing"
)

// blockingWriter records writes and blocks each until released.
type blockingWriter struct {
	started chan int
	release chan struct{}
}

func newBlockingWriter() *blockingWriter {
	return &blockingWriter{started: make(chan int, 16), release: make(chan struct{})}
}

func (w *blockingWriter) Write(p []byte) (int, error) {
	w.started <- len(p)
	<-w.release
	return len(p), nil
}

func TestWriteGatedSerializesLargeRequests(t *testing.T) {
	gate := make(chan struct{}, 1)
	big := [][]byte{make([]byte, bulkWrite)}
	w1 := newBlockingWriter()
	done1 := make(chan error, 1)
	go func() { done1 <- writeGated(context.Background(), gate, w1, big) }()
	<-w1.started
	if len(gate) != 1 {
		t.Fatal("a large write in progress does not hold the gate")
	}
	// Another large write waits for the gate: with its context ended it
	// gives up without writing.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w2 := newBlockingWriter()
	if err := writeGated(ctx, gate, w2, big); !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting write returned %v, want the context's error", err)
	}
	if len(w2.started) != 0 {
		t.Fatal("a second large request was written while the first one held the gate")
	}
	// Small requests do not wait.
	small := newBlockingWriter()
	close(small.release)
	if err := writeGated(context.Background(), gate, small, [][]byte{make([]byte, 100)}); err != nil || len(small.started) != 1 {
		t.Fatalf("small write: %v, %d writes", err, len(small.started))
	}
	close(w1.release)
	if err := <-done1; err != nil {
		t.Fatal(err)
	}
	if len(gate) != 0 {
		t.Fatal("the gate was not released")
	}
	close(w2.release)
	if err := writeGated(context.Background(), gate, w2, big); err != nil || len(w2.started) != 1 {
		t.Fatalf("large write after release: %v", err)
	}
}
