package localcluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

func startFake(t *testing.T, mode string, opts Options) *Cluster {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	opts.Binary = exe
	opts.BaseDir = t.TempDir()
	opts.NoWait = true
	opts.Env = append(opts.Env, fakeEnv+"="+mode)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func logContains(c *Cluster, id int32, s string) Cond {
	return func(context.Context) (bool, error) {
		b, err := os.ReadFile(c.Node(id).LogPath)
		return strings.Contains(string(b), s), err
	}
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func TestLifecycle(t *testing.T) {
	t.Parallel()
	c := startFake(t, "1", Options{Nodes: 3, Metrics: true, ExtraArgs: []string{"--fsync", "never"}})
	ctx := context.Background()
	if got := len(c.Bootstrap()); got != 3 {
		t.Fatalf("bootstrap has %d addresses", got)
	}
	if !strings.Contains(c.Controllers(), "1@127.0.0.1:") || strings.Count(c.Controllers(), "@") != 3 {
		t.Fatalf("controllers %q", c.Controllers())
	}
	seen := map[string]bool{}
	for _, n := range c.Nodes() {
		if !n.Running || n.PID == 0 || n.MetricsAddr == "" || !n.ControllerEligible {
			t.Fatalf("node %+v", n)
		}
		if seen[n.Addr] {
			t.Fatalf("address %s used twice", n.Addr)
		}
		seen[n.Addr] = true
		if err := c.WaitFor(ctx, logContains(c, n.ID, "listening on "+n.Addr)); err != nil {
			t.Fatal(err)
		}
	}
	// Node certificates for their own ids, a client certificate for clients.
	for name, role := range map[string]string{"node1": "fake node 1", "node3": "fake node 3", "client": "fake client"} {
		if b, err := os.ReadFile(c.ClientTLS().Dir + "/" + name + ".crt"); err != nil || string(b) != role {
			t.Fatalf("certificate %s: %q %v, want %q", name, b, err, role)
		}
	}
	if !strings.Contains(strings.Join(c.ClientArgs(), " "), "--cert-name client") {
		t.Fatalf("client args %v", c.ClientArgs())
	}

	// Kill: SIGKILL, waits for the exit.
	pid1 := c.Node(1).PID
	if err := c.Kill(1); err != nil {
		t.Fatal(err)
	}
	if n := c.Node(1); n.Running || n.PID != 0 || n.LastExit == nil {
		t.Fatalf("after kill: %+v", n)
	}
	if alive(pid1) {
		t.Fatalf("pid %d still alive", pid1)
	}
	if err := c.Kill(1); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("second kill: %v", err)
	}

	// Restart of a dead node starts it on the same address.
	if err := c.Restart(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if n := c.Node(1); !n.Running || n.Starts != 2 || n.PID == pid1 {
		t.Fatalf("after restart: %+v", n)
	}
	if err := c.StartNode(ctx, 1); !errors.Is(err, ErrRunning) {
		t.Fatalf("start of running node: %v", err)
	}

	// Pause then Stop: SIGTERM reaches a stopped process after SIGCONT.
	if err := c.Pause(2); err != nil {
		t.Fatal(err)
	}
	if !c.Node(2).Paused {
		t.Fatal("not paused")
	}
	if err := c.Stop(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if n := c.Node(2); n.Running || n.LastExit != nil {
		t.Fatalf("after stop: %+v (want a clean exit)", n)
	}
	if err := c.WaitFor(ctx, logContains(c, 2, "controlled shutdown")); err != nil {
		t.Fatal(err)
	}
	if tail := c.LogTail(2, 1); tail != "fake node 2 controlled shutdown" {
		t.Fatalf("log tail %q", tail)
	}

	// Restart of a running node: SIGTERM then start.
	if err := c.Restart(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if err := c.Pause(3); err != nil {
		t.Fatal(err)
	}
	if err := c.Resume(3); err != nil {
		t.Fatal(err)
	}
	if len(c.Crashes()) != 0 {
		t.Fatalf("crashes: %+v", c.Crashes())
	}

	pids := []int{c.Node(1).PID, c.Node(3).PID}
	dir := c.Dir()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Fatalf("pid %d survived Close", pid)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("directory not removed: %v", err)
	}
}

func TestCrashIsRecorded(t *testing.T) {
	c := startFake(t, "crash", Options{Nodes: 2, Insecure: true})
	ctx := context.Background()
	err := c.WaitFor(ctx, func(context.Context) (bool, error) { return len(c.Crashes()) == 1, nil })
	if err != nil {
		t.Fatal(err)
	}
	cr := c.Crashes()[0]
	if cr.ID != 2 || cr.Err == nil || !strings.Contains(cr.Err.Error(), "exit status 3") {
		t.Fatalf("crash %+v", cr)
	}
	out, err := cr.Output(1 << 20)
	if err != nil || string(out) != "fake node 2 crashing\n" {
		t.Fatalf("crash output %q (%v), want only what the incarnation printed", out, err)
	}
	if tail, _ := cr.Output(9); string(tail) != "crashing\n" {
		t.Fatalf("last 9 bytes of the crash output %q", tail)
	}
	if c.ClientTLS().Dir != "" {
		t.Fatal("insecure cluster has a TLS dir")
	}
}

func TestCommandHookAndKeep(t *testing.T) {
	t.Parallel()
	var hooked []int32
	c := startFake(t, "1", Options{
		Nodes: 1,
		Keep:  true,
		Command: func(id int32, argv []string) []string {
			// A wrapper that forks: sh runs the node as its child.
			return append([]string{"/bin/sh", "-c", `"$@"; exit $?`, "sh"}, argv...)
		},
		BeforeStart: func(ctx context.Context, id int32) error { hooked = append(hooked, id); return nil },
	})
	ctx := context.Background()
	if err := c.WaitFor(ctx, logContains(c, 1, "listening on")); err != nil {
		t.Fatal(err)
	}
	if len(hooked) != 1 || hooked[0] != 1 {
		t.Fatalf("BeforeStart calls %v", hooked)
	}
	// Kill reaches the wrapper's child through the process group.
	if err := c.Kill(1); err != nil {
		t.Fatal(err)
	}
	dir := c.Dir()
	c.Close()
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("Keep: directory gone: %v", err)
	}
}

func TestWaitForTimesOut(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	boom := errors.New("not yet")
	err := Poll(ctx, 5*time.Millisecond, func(context.Context) (bool, error) { return false, boom })
	var we *WaitError
	if !errors.As(err, &we) || !errors.Is(err, context.DeadlineExceeded) || we.Last != boom {
		t.Fatalf("err = %v", err)
	}
}

// running reports whether pid exists and is not a zombie.
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

func TestChildrenDieWithParent(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Pdeathsig is Linux only")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), fakeEnv+"=parent", "LOCALCLUSTER_BASEDIR="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var p1, p2 int
	if _, err := fmt.Sscanf(line, "pids %d %d", &p1, &p2); err != nil {
		t.Fatalf("parent said %q: %v", line, err)
	}
	if !running(p1) || !running(p2) {
		t.Fatal("children not running")
	}
	cmd.Process.Kill()
	cmd.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = Poll(ctx, 10*time.Millisecond, func(context.Context) (bool, error) { return !running(p1) && !running(p2), nil })
	if err != nil {
		syscall.Kill(p1, syscall.SIGKILL)
		syscall.Kill(p2, syscall.SIGKILL)
		t.Fatalf("children outlived their parent: %v", err)
	}
}
