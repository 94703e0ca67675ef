package segment

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestPwriteRawWritesAtTheOffset(t *testing.T) {
	name := filepath.Join(t.TempDir(), "f")
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	big := make([]byte, 3<<20+17)
	for i := range big {
		big[i] = byte(rand.Uint32())
	}
	if n, err := pwriteRaw(f, nil, 0); n != 0 || err != nil {
		t.Fatalf("empty write: %d %v", n, err)
	}
	if n, err := pwriteRaw(f, []byte("hello"), 10); n != 5 || err != nil {
		t.Fatalf("small write: %d %v", n, err)
	}
	if n, err := pwriteRaw(f, big, 4096); n != len(big) || err != nil {
		t.Fatalf("large write: %d %v", n, err)
	}
	got, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, 4096+len(big))
	copy(want[10:], "hello")
	copy(want[4096:], big)
	if !bytes.Equal(got, want) {
		t.Fatal("the file does not hold what was written where it was written")
	}
}

func TestPwriteRawReportsErrors(t *testing.T) {
	name := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(name, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	ro, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	_, err = pwriteRaw(ro, []byte("y"), 0)
	var pe *os.PathError
	if !errors.As(err, &pe) || pe.Op != "write" || pe.Path != name || !errors.Is(err, syscall.EBADF) {
		t.Fatalf("write to a read-only file: %v, want a write PathError for %s wrapping EBADF", err, name)
	}
	ro.Close()
	if _, err := pwriteRaw(ro, []byte("y"), 0); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("write to a closed file: %v, want os.ErrClosed", err)
	}
	rw, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	if _, err := pwriteRaw(rw, []byte("y"), -1); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("write at a negative offset: %v, want EINVAL", err)
	}
}
