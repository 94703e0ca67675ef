package raftnode

import (
	"errors"
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
type dirFiles struct {
	fs  segment.FS
	dir string
}

func newDirFiles(fs segment.FS, dir string) dirFiles {
	if fs == nil {
		fs = segment.OSFS{}
	}
	return dirFiles{fs: fs, dir: dir}
}

func (d dirFiles) WriteFile(name string, data []byte) error {
	if err := segment.WriteCheckpoint(d.fs, filepath.Join(d.dir, name), data); err != nil {
		return fmt.Errorf("raftnode: write %s: %w", name, err)
	}
	return nil
}

func (d dirFiles) ReadFile(name string) ([]byte, error) {
	return segment.ReadCheckpoint(d.fs, filepath.Join(d.dir, name))
}

func (d dirFiles) List() ([]string, error) {
	names, err := d.fs.ReadDir(d.dir)
	if err != nil {
		return nil, fmt.Errorf("raftnode: list %s: %w", d.dir, err)
	}
	return names, nil
}

func (d dirFiles) Remove(name string) error {
	if err := d.fs.Remove(filepath.Join(d.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("raftnode: remove %s: %w", name, err)
	}
	return nil
}
