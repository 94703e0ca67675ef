package localcluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"
)

// The test binary doubles as a UDP echo server / client run inside a
// namespace (`ip netns exec NS <test binary> -test.run=TestNetNSHelper`).
const netnsHelperEnv = "LOCALCLUSTER_NETNS_HELPER"

func TestNetNSHelper(t *testing.T) {
	mode := os.Getenv(netnsHelperEnv)
	if mode == "" {
		t.Skip("helper process only")
	}
	addr := os.Getenv(netnsHelperEnv + "_ADDR")
	switch mode {
	case "echo":
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		buf := make([]byte, 64)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				os.Exit(0)
			}
			pc.WriteTo(buf[:n], from)
		}
	case "ping":
		if err := udpPing(addr, 2*time.Second); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	case "recv": // exit 0 once a packet arrives, 1 if none within 2s
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		pc.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, _, err := pc.ReadFrom(make([]byte, 64)); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	case "send": // send to addr every 10ms for 2s
		c, err := net.Dial("udp", addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			c.Write([]byte("hello"))
		}
		os.Exit(0)
	}
}

func udpPing(addr string, timeout time.Duration) error {
	c, err := net.Dial("udp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	deadline := time.Now().Add(timeout)
	buf := make([]byte, 64)
	for time.Now().Before(deadline) {
		c.Write([]byte("ping"))
		c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if n, err := c.Read(buf); err == nil && string(buf[:n]) == "ping" {
			return nil
		}
	}
	return fmt.Errorf("no echo from %s within %v", addr, timeout)
}

func TestNetNSIsolateAndHeal(t *testing.T) {
	t.Parallel()
	if err := NetNSAvailable(); err != nil {
		t.Skipf("network partition cases skipped: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := NewNetNS(ctx)
	if err != nil {
		t.Skipf("network namespaces unusable here: %v", err)
	}
	defer func() {
		if err := n.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	var opts Options
	n.Apply(&opts)
	for _, id := range []int32{1, 2} {
		if err := opts.BeforeStart(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := opts.BeforeStart(ctx, 1); err != nil { // idempotent
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	helper := func(id int32, mode, addr string) *exec.Cmd {
		argv := opts.Command(id, []string{exe, "-test.run=^TestNetNSHelper$"})
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), netnsHelperEnv+"="+mode, netnsHelperEnv+"_ADDR="+addr)
		cmd.Stderr = os.Stderr
		return cmd
	}
	echo := helper(1, "echo", n.Addr(1))
	if err := echo.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { echo.Process.Kill(); echo.Wait() }()

	if err := udpPing(n.Addr(1), 5*time.Second); err != nil {
		t.Fatalf("caller -> node 1: %v", err)
	}
	if err := helper(2, "ping", n.Addr(1)).Run(); err != nil {
		t.Fatalf("node 2 -> node 1 through the bridge: %v", err)
	}
	if err := n.Isolate(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := n.Isolated(); len(got) != 1 || got[0] != 1 {
		t.Fatalf("Isolated = %v, want [1]", got)
	}
	if err := udpPing(n.Addr(1), 500*time.Millisecond); err == nil {
		t.Fatal("caller reached isolated node 1")
	}
	if err := helper(2, "ping", n.Addr(1)).Run(); err == nil {
		t.Fatal("node 2 reached isolated node 1")
	}
	if err := n.Heal(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := udpPing(n.Addr(1), 5*time.Second); err != nil {
		t.Fatalf("after heal: %v", err)
	}
}

func TestIsNetNSName(t *testing.T) {
	for s, want := range map[string]bool{"plc0a1fn1": true, "plc0a1fn12": true, "plc0a1fbr": false, "plcxyzwn1": false, "other": false, "plc0a1f": false} {
		if got := isNetNSName(s); got != want {
			t.Errorf("isNetNSName(%q) = %v, want %v", s, got, want)
		}
	}
}
