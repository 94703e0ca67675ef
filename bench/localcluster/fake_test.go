package localcluster

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
)

// fakeEnv makes the test binary act as a paymentlog binary (see fakeMain).
const fakeEnv = "LOCALCLUSTER_FAKE_PAYMENTLOG"

func TestMain(m *testing.M) {
	if os.Getenv(fakeEnv) != "" {
		os.Exit(fakeMain(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// fakeMain imitates the two commands the Cluster runs: `cert init|issue`
// writes placeholder files naming the role ("fake node N" with --node-id N,
// else "fake client"); `node start` prints its arguments and waits for
// SIGTERM (exit 0). With $fakeEnv=crash, node 2 exits with status 3 at once.
func fakeMain(args []string) int {
	flag := func(name string) string {
		for i, a := range args {
			if a == "--"+name && i+1 < len(args) {
				return args[i+1]
			}
		}
		return ""
	}
	switch {
	case os.Getenv(fakeEnv) == "parent":
		return fakeParent()
	case len(args) >= 2 && args[0] == "cert":
		dir := flag("dir")
		name := flag("name")
		if name == "" {
			name = "ca"
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		role := "fake client"
		if id := flag("node-id"); id != "" {
			role = "fake node " + id
		}
		os.WriteFile(filepath.Join(dir, name+".crt"), []byte(role), 0o644)
		return 0
	case len(args) >= 2 && args[0] == "node" && args[1] == "start":
		if os.Getenv(fakeEnv) == "crash" && flag("id") == "2" {
			fmt.Println("fake node 2 crashing")
			return 3
		}
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		fmt.Println("fake node", flag("id"), "listening on", flag("addr"), "data", flag("data-dir"))
		<-term
		fmt.Println("fake node", flag("id"), "controlled shutdown")
		return 0
	}
	fmt.Fprintln(os.Stderr, "fake paymentlog: unknown command", args)
	return 2
}

// fakeParent starts a 2-node fake cluster of itself, prints the children's
// pids on one line and blocks, to be SIGKILLed by TestChildrenDieWithParent.
func fakeParent() int {
	exe, _ := os.Executable()
	c, err := Start(context.Background(), Options{Binary: exe, Nodes: 2, Insecure: true, NoWait: true,
		BaseDir: os.Getenv("LOCALCLUSTER_BASEDIR"), Env: []string{fakeEnv + "=1"}})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("pids", c.Node(1).PID, c.Node(2).PID)
	select {}
}
