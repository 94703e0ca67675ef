package segment

import "testing"

// TestDurableEnd: with SyncAlways the durable end trails appends until a
// flush covers them and follows truncations down; with the other policies it
// is the log end.
func TestDurableEnd(t *testing.T) {
	l := mustOpen(t, "/log", Options{FS: NewMemFS(), MaxIndexBytes: 1024, SegmentBytes: 1 << 16})
	defer l.Close()
	for i := range 3 {
		if _, err := l.Append(ctx, testBatch(i, 2, 0), 1); err != nil {
			t.Fatal(err)
		}
	}
	if got := l.DurableEnd(); got != 0 {
		t.Fatalf("durable end %d before any flush of 6 records", got)
	}
	if err := l.WaitDurable(ctx, 4); err != nil {
		t.Fatal(err)
	}
	if got := l.DurableEnd(); got != 6 {
		t.Fatalf("durable end %d after a flush, want 6 (the flush covers the whole log)", got)
	}
	if _, err := l.TruncateTo(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, testBatch(9, 3, 0), 2); err != nil {
		t.Fatal(err)
	}
	if got := l.DurableEnd(); got != 2 {
		t.Fatalf("durable end %d after a truncation to 2 and an append, want 2", got)
	}

	li := mustOpen(t, "/interval", Options{FS: NewMemFS(), MaxIndexBytes: 1024, SegmentBytes: 1 << 16, Sync: SyncNever})
	defer li.Close()
	if _, err := li.Append(ctx, testBatch(1, 2, 0), 1); err != nil {
		t.Fatal(err)
	}
	if got := li.DurableEnd(); got != 2 {
		t.Fatalf("durable end %d under fsync never, want the log end 2", got)
	}
}
