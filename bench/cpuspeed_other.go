//go:build !linux

package bench

// raiseProbePriority is Linux-only; elsewhere the probe runs at normal
// priority.
func raiseProbePriority() bool { return false }
