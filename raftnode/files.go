package raftnode

import (
	"fmt"
	"os"
	"path/filepath"

	"paymentlog/segment"
)

// fileStore holds the small files beside the entry log (hard state,
// snapshots). Every write replaces a file atomically and durably. Tests
// substitute an in-memory version that can lose unsynced state.
type fileStore interface {
	WriteFile(name string, data []byte) error
	// ReadFile returns an error wrapping os.ErrNotExist if name is absent.
	ReadFile(name string) ([]byte, error)
	List() ([]string, error)
	Remove(name string) error
}

// dirFiles is the fileStore of a directory, written with segment's checkpoint
// helpers (temporary file, fsync, rename, fsync directory).
type dirFiles struct{ dir string }

func (d dirFiles) WriteFile(name string, data []byte) error {
	if err := segment.WriteCheckpoint(nil, filepath.Join(d.dir, name), data); err != nil {
		return fmt.Errorf("raftnode: write %s: %w", name, err)
	}
	return nil
}

func (d dirFiles) ReadFile(name string) ([]byte, error) {
	return segment.ReadCheckpoint(nil, filepath.Join(d.dir, name))
}

func (d dirFiles) List() ([]string, error) {
	ents, err := os.ReadDir(d.dir)
	if err != nil {
		return nil, fmt.Errorf("raftnode: list %s: %w", d.dir, err)
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

func (d dirFiles) Remove(name string) error {
	if err := os.Remove(filepath.Join(d.dir, name)); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("raftnode: remove %s: %w", name, err)
	}
	return nil
}
