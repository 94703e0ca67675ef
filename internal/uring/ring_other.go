//go:build !linux

package uring

import (
	"errors"
	"os"
)

var (
	// ErrNotSubmitted wraps every error of an Fsync that never reached the
	// kernel: the caller may sync another way.
	ErrNotSubmitted = errors.New("uring: not submitted")
	// ErrClosed is returned (wrapped in ErrNotSubmitted) on a closed ring.
	ErrClosed = errors.New("uring: ring closed")
)

// Ring is unavailable outside Linux; New always fails.
type Ring struct{}

// New fails: io_uring is Linux's.
func New(entries uint32) (*Ring, error) { return nil, errors.ErrUnsupported }

func (r *Ring) Fsync(f *os.File, off, n int64) error { return ErrNotSubmitted }
func (r *Ring) FsyncAll(f *os.File) error            { return ErrNotSubmitted }
func (r *Ring) Fadvise(f *os.File, off, n int64, advice uint32) error {
	return ErrNotSubmitted
}
func (r *Ring) Madvise(b []byte, advice uint32) error { return ErrNotSubmitted }
func (r *Ring) Submitted() int64                      { return 0 }
func (r *Ring) Close() error                          { return nil }
