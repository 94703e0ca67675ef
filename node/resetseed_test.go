package node

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
)

// The reset seed is made once, kept secret and survives restarts; a torn one
// is replaced.
func TestResetSeedSurvivesRestarts(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	first, err := loadResetSeed(dir, log)
	if err != nil || len(first) != resetSeedLen {
		t.Fatalf("first start: %d bytes, %v", len(first), err)
	}
	fi, err := os.Stat(filepath.Join(dir, ResetSeedFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("seed file: %v, %v; want mode 0600", fi, err)
	}
	again, err := loadResetSeed(dir, log)
	if err != nil || !bytes.Equal(again, first) {
		t.Fatalf("second start: %x, %v; want the first start's %x", again, err, first)
	}
	other, err := loadResetSeed(t.TempDir(), log)
	if err != nil || bytes.Equal(other, first) {
		t.Fatalf("another data directory got the same seed (%v)", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ResetSeedFile), first[:7], 0o600); err != nil {
		t.Fatal(err)
	}
	torn, err := loadResetSeed(dir, log)
	if err != nil || len(torn) != resetSeedLen {
		t.Fatalf("torn seed: %d bytes, %v", len(torn), err)
	}
	if kept, _ := loadResetSeed(dir, log); !bytes.Equal(kept, torn) {
		t.Fatal("the replacement seed was not kept")
	}
}
