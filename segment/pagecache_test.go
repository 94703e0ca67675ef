package segment

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// residentPages reports, for each page of path's first n bytes, whether it
// is in the page cache (mincore on a mapping of its own).
func residentPages(tb testing.TB, path string, n int) []bool {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	m, err := unix.Mmap(int(f.Fd()), 0, n, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		tb.Fatal(err)
	}
	defer unix.Munmap(m)
	vec := make([]byte, (n+pageSize-1)/pageSize)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(n), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		tb.Fatal(errno)
	}
	out := make([]bool, len(vec))
	for i, v := range vec {
		out[i] = v&1 != 0
	}
	return out
}

// skipUnlessDropsPageCache skips when dir's file system keeps clean pages
// that POSIX_FADV_DONTNEED asks to drop (tmpfs: its pages are the file).
func skipUnlessDropsPageCache(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, "probe")
	if err := os.WriteFile(path, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(path)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_ = f.Sync()
	_ = unix.Fadvise(int(f.Fd()), 0, 1<<20, unix.FADV_DONTNEED)
	for _, r := range residentPages(t, path, 1<<20) {
		if r {
			t.Skipf("the file system under %s keeps pages that fadvise(DONTNEED) drops elsewhere (tmpfs?)", dir)
		}
	}
}

// TestFlushDropsDurableBytesFromThePageCache: with CacheBytes 1 MiB, after
// 8 MiB are appended and made durable, the pages more than 1 MiB (plus the
// drop step) behind the end are no longer cached, the last MiB is, and every
// batch reads back unchanged (from disk). With CacheBytes -1 nothing is
// dropped.
func TestFlushDropsDurableBytesFromThePageCache(t *testing.T) {
	// Batches of 64 KiB, and of 960 KiB (the bench's producers send
	// batches of up to 1 MiB, which the page cache holds in large folios).
	for _, scale := range []int{1, 15} {
		t.Run(fmt.Sprintf("batches of %d KiB", scale*64), func(t *testing.T) { testFlushDrops(t, scale) })
	}
}

func testFlushDrops(t *testing.T, scale int) {
	for _, keep := range []int64{1 << 20, -1} {
		dir := t.TempDir()
		skipUnlessDropsPageCache(t, dir)
		var reported int64
		l := mustOpen(t, dir, Options{SegmentBytes: 64 << 20, CacheBytes: keep, OnCacheDrop: func(n int64) { reported += n }})
		var want []Batch
		var size int64
		for i := 0; size < 8<<20; i++ {
			b := NewBuilder(BuilderOptions{})
			for j := 0; j < 16*scale; j++ {
				b.Add(int64(i), nil, bytes.Repeat([]byte{byte(i), byte(j)}, 2048), nil)
			}
			batch := b.Build()
			info := mustAppend(t, l, batch, 0)
			if err := l.WaitDurable(ctx, info.LastOffset+1); err != nil {
				t.Fatal(err)
			}
			want = append(want, append(Batch(nil), batch...))
			size += int64(len(batch))
		}
		res := residentPages(t, filepath.Join(dir, segmentName(0)+".log"), int(size))
		// The kernel may evict a few clean pages of its own (other tests
		// on a busy machine): pages that must stay cached are counted, and
		// 90% is enough; a page the drop covered must not be cached (only
		// a read brings it back, and nothing reads it here).
		var dropped, kept, shouldKeep, evicted int
		for i, r := range res {
			pos := int64(i * pageSize)
			mayDrop := keep > 0 && pos+int64(pageSize) <= size-keep-dropStep
			switch {
			case mayDrop && r:
				t.Errorf("keep %d: page at %d of %d, durable and %d bytes behind the end, is still cached", keep, pos, size, size-pos)
			case mayDrop:
				dropped++
			case keep < 0 || pos >= size-1<<20:
				shouldKeep++
				if !r {
					evicted++
				}
			}
			if r {
				kept++
			}
		}
		if evicted*10 > shouldKeep {
			t.Errorf("keep %d: %d of the %d pages that the drop leaves cached are not cached", keep, evicted, shouldKeep)
		}
		if keep < 0 && reported != 0 || keep > 0 && reported < int64(dropped*pageSize) {
			t.Errorf("keep %d: OnCacheDrop reported %d bytes, %d pages behind the window are not cached", keep, reported, dropped)
		}
		if keep > 0 && dropped == 0 {
			t.Errorf("keep %d: nothing was dropped", keep)
		}
		t.Logf("keep %d: %d pages dropped, %d cached, of %d bytes", keep, dropped, kept, size)
		got := readAll(t, l, 0)
		if len(got) != len(want) {
			t.Fatalf("keep %d: read %d batches back, want %d", keep, len(got), len(want))
		}
		for i := range want {
			g, w := got[i], want[i]
			if !bytes.Equal(g[HeaderSize:], w[HeaderSize:]) {
				t.Fatalf("keep %d: batch %d reads back different records", keep, i)
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTruncateAfterPageCacheDrop: after a truncation back into the dropped
// range, more appends and flushes read back exactly what the log now holds,
// and the rewritten range is dropped again behind the end (a truncation that
// did not lower the drop mark left it cached).
func TestTruncateAfterPageCacheDrop(t *testing.T) {
	dir := t.TempDir()
	skipUnlessDropsPageCache(t, dir)
	l := mustOpen(t, dir, Options{SegmentBytes: 64 << 20, CacheBytes: 1 << 20})
	defer l.Close()
	var want []Batch
	appendMiB := func(seed, mib int) {
		for size := 0; size < mib<<20; {
			b := NewBuilder(BuilderOptions{})
			for j := 0; j < 16; j++ {
				b.Add(int64(seed), nil, bytes.Repeat([]byte{byte(seed), byte(len(want)), byte(j)}, 1365), nil)
			}
			batch := b.Build()
			info := mustAppend(t, l, batch, 0)
			if err := l.WaitDurable(ctx, info.LastOffset+1); err != nil {
				t.Fatal(err)
			}
			want = append(want, append(Batch(nil), batch...))
			size += len(batch)
		}
	}
	appendMiB(1, 6)
	cut := len(want) / 3 // well inside the dropped range
	if _, err := l.TruncateTo(ctx, int64(cut*16)); err != nil {
		t.Fatal(err)
	}
	want = want[:cut]
	var cutPos int64
	for _, b := range want {
		cutPos += int64(len(b))
	}
	appendMiB(2, 6)
	var size int64
	for _, b := range want {
		size += int64(len(b))
	}
	// Pages below the cut that the truncation itself read back in (batch
	// headers around it) stay cached: only the rewritten range is checked.
	res := residentPages(t, filepath.Join(dir, segmentName(0)+".log"), int(size))
	for i, r := range res {
		if pos := int64(i * pageSize); r && pos >= cutPos && pos+int64(pageSize) <= size-(1<<20)-dropStep {
			t.Fatalf("page at %d of %d (rewritten after the truncation at %d) is still cached", pos, size, cutPos)
		}
	}
	got := readAll(t, l, 0)
	if len(got) != len(want) {
		t.Fatalf("read %d batches back, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i][HeaderSize:], want[i][HeaderSize:]) {
			t.Fatalf("batch %d reads back different records", i)
		}
	}
}
