package uring

import "sync"

// SharedEntries is the size of the process's shared ring: flushes beyond it
// wait for a slot.
const SharedEntries = 64

var shared struct {
	once sync.Once
	r    *Ring
	err  error
}

// Shared returns the process's ring, set up on first use, or the error that
// kept it from being set up (then on every call).
func Shared() (*Ring, error) {
	shared.once.Do(func() { shared.r, shared.err = New(SharedEntries) })
	return shared.r, shared.err
}
