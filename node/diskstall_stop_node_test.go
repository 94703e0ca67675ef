package node_test

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// TestNodeReadsSIGCONT: a running node with stall detection reads the
// SIGCONT its process gets (diskstall_stop.go), through which a stopped
// process tells its disk stall detector that it was stopped. The test
// sends one to its own process, which changes nothing for a running one.
func TestNodeReadsSIGCONT(t *testing.T) {
	tc := mustStartClusterWith(t, 1, nil)
	n := tc.node(1)
	before := time.Now()
	waitFor(t, "the node to read a SIGCONT", 10*time.Second, func() bool {
		if err := syscall.Kill(os.Getpid(), syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		return n.LastContinue().After(before)
	})
}
