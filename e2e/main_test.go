// Package e2e holds multi-process tests: they build the paymentlog binary
// once per test binary run and drive real clusters of it (see bench/chaos).
//
// Most of their time is spent waiting (fault holds, restarts, elections),
// not computing, so tests that assert no timing bound call t.Parallel: go
// test runs them after the serial ones, -parallel (GOMAXPROCS) at a time,
// in an order it does not fix (TestChaos, the longest, may start last).
// The tests that stay serial, and so run first with no other test of this
// package beside them (go test -p may still run another package's tests),
// are those whose assertions extra load could break: the disk-stall,
// disk-full and slow-disk tests (pauses and failover within bounds, a
// released disk reserve not taken by another write) and
// TestMirrorSurvivesSIGKILL (its kills must land while the producer still
// writes). Each test has its own ports (internal/freeport), temporary
// directories and, for chaos runs, its own network namespaces.
package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// binary is the paymentlog executable built by TestMain.
var binary string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "paymentlog-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "paymentlog")
	cmd := exec.Command("go", "build", "-o", binary, ".")
	cmd.Dir = ".." // the module root
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: building paymentlog: %v\n", err)
		return 1
	}
	return m.Run()
}
