package node_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"paymentlog/node"
)

// A second node on a running node's data directory stops before it touches
// anything, names the owner, and the directory is free again once the first
// node is gone.
func TestDataDirLockedWhileNodeRuns(t *testing.T) {
	dir := t.TempDir()
	cfg := func() node.Config {
		c := node.DefaultConfig()
		c.ID = 1
		c.Addr = freeUDPAddr(t)
		c.Controllers = map[int32]string{1: c.Addr}
		c.DataDir = dir
		c.NoRaftSync = true
		c.Logger = testLogger(t)
		return c
	}
	first, err := node.Start(context.Background(), cfg())
	if err != nil {
		t.Fatal(err)
	}
	_, err = node.Start(context.Background(), cfg())
	if !errors.Is(err, node.ErrDataDirInUse) {
		first.Kill()
		t.Fatalf("second node on the same data dir: err %v, want ErrDataDirInUse", err)
	}
	if want := "pid " + strconv.Itoa(os.Getpid()); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name the owner (%s)", err, want)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, node.LockFileName)); strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("lock file holds %q, want the owner's pid %d", b, os.Getpid())
	}
	first.Kill()
	again, err := node.Start(context.Background(), cfg())
	if err != nil {
		t.Fatalf("restart after the first node stopped: %v", err)
	}
	again.Kill()
}
