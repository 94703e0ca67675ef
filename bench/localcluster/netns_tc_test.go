package localcluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestRandomBPF: the classic BPF program matches with probability p (its
// threshold is p·2³²) and has the four instructions its length says.
func TestRandomBPF(t *testing.T) {
	for p, thr := range map[float64]string{0: "0", 0.25: "1073741824", 1: "4294967295", 1.5: "4294967295", -1: "0"} {
		got := randomBPF(p)
		want := "4,32 0 0 4294963256,37 0 1 " + thr + ",6 0 0 0,6 0 0 4294967295"
		if got != want {
			t.Errorf("randomBPF(%v) = %q, want %q", p, got, want)
		}
	}
}

func TestLinkFaultCommands(t *testing.T) {
	join := func(cmds [][]string) []string {
		var out []string
		for _, c := range cmds {
			out = append(out, strings.Join(c, " "))
		}
		return out
	}
	if got, want := join(oneWayCmds(Outbound)), []string{
		"filter add dev eth0 egress protocol ip prio 1 u32 match u32 0 0 action mirred egress redirect dev bh0",
	}; !reflect.DeepEqual(got, want) {
		t.Errorf("one-way out:\n%q\nwant\n%q", got, want)
	}
	if got, want := join(oneWayCmds(Inbound)), []string{
		"filter add dev eth0 ingress protocol ip prio 1 u32 match u32 0 0 action mirred egress redirect dev bh0",
	}; !reflect.DeepEqual(got, want) {
		t.Errorf("one-way in:\n%q\nwant\n%q", got, want)
	}
	if got, want := join(cutCmds("10.1.2.3")), []string{
		"filter add dev eth0 egress protocol ip prio 1 u32 match ip dst 10.1.2.3/32 action mirred egress redirect dev bh0",
		"filter add dev eth0 ingress protocol ip prio 1 u32 match ip src 10.1.2.3/32 action mirred egress redirect dev bh0",
	}; !reflect.DeepEqual(got, want) {
		t.Errorf("cut:\n%q\nwant\n%q", got, want)
	}
	q := LinkQuality{Loss: 0.25, Duplicate: 0.25, Reorder: 0.25, RateBits: 4_000_000, Latency: 80 * time.Millisecond}
	r := randomBPF(0.25)
	want := []string{
		"qdisc replace dev qout0 root tbf rate 4000000bit burst 5000 latency 80ms",
		"filter add dev eth0 egress protocol ip prio 1 bpf bytecode " + r + " action mirred egress redirect dev bh0",
		"filter add dev eth0 egress protocol ip prio 2 bpf bytecode " + r + " action mirred egress mirror dev eth0",
		"filter add dev eth0 egress protocol ip prio 3 bpf bytecode " + r,
		"filter add dev eth0 egress protocol ip prio 4 u32 match u32 0 0 action mirred egress redirect dev qout0",
		"qdisc replace dev qin0 root tbf rate 4000000bit burst 5000 latency 80ms",
		"filter add dev eth0 ingress protocol ip prio 1 bpf bytecode " + r + " action mirred egress redirect dev bh0",
		"filter add dev eth0 ingress protocol ip prio 2 bpf bytecode " + r + " action mirred ingress mirror dev eth0",
		"filter add dev eth0 ingress protocol ip prio 3 bpf bytecode " + r,
		"filter add dev eth0 ingress protocol ip prio 4 u32 match u32 0 0 action mirred egress redirect dev qin0",
	}
	if got := join(degradeCmds(q)); !reflect.DeepEqual(got, want) {
		t.Errorf("degrade:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Only loss: no queue, no reordering, no duplication.
	if got := join(degradeCmds(LinkQuality{Loss: 0.1, Reorder: 0.5})); len(got) != 2 || !strings.Contains(got[0], "redirect dev bh0") || !strings.Contains(got[1], "ingress") {
		t.Errorf("loss only: %q", got)
	}
}

// linkFaultRig is three namespaces with helper processes started from the
// test binary (TestNetNSHelper).
type linkFaultRig struct {
	t    *testing.T
	ctx  context.Context
	n    *NetNS
	opts Options
	exe  string
}

func newLinkFaultRig(t *testing.T) *linkFaultRig {
	if err := TCAvailable(); err != nil {
		t.Skipf("link faults unusable here: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	n, err := NewNetNS(ctx)
	if err != nil {
		t.Skipf("network namespaces unusable here: %v", err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	r := &linkFaultRig{t: t, ctx: ctx, n: n}
	n.Apply(&r.opts)
	for _, id := range []int32{1, 2, 3} {
		if err := r.opts.BeforeStart(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if r.exe, err = os.Executable(); err != nil {
		t.Fatal(err)
	}
	return r
}

// helper returns node id's helper process in mode, talking to addr.
func (r *linkFaultRig) helper(id int32, mode, addr string) *exec.Cmd {
	argv := r.opts.Command(id, []string{r.exe, "-test.run=^TestNetNSHelper$"})
	cmd := exec.CommandContext(r.ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), netnsHelperEnv+"="+mode, netnsHelperEnv+"_ADDR="+addr)
	return cmd
}

// echo starts an echo server on node id, port 7100.
func (r *linkFaultRig) echo(id int32) {
	cmd := r.helper(id, "echo", r.n.Addr(id))
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if err := udpPing(r.n.Addr(id), 5*time.Second); err != nil {
		r.t.Fatalf("echo on node %d: %v", id, err)
	}
}

// reaches reports whether node from's packets reach node to's echo server
// and its answers come back.
func (r *linkFaultRig) reaches(from, to int32) bool {
	return r.helper(from, "ping", r.n.Addr(to)).Run() == nil
}

// nodeHears reports whether packets the caller sends reach node id.
func (r *linkFaultRig) nodeHears(id int32) bool {
	addr := net.JoinHostPort(r.n.IP(id), "7200")
	cmd := r.helper(id, "recv", addr)
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	c, err := net.Dial("udp", addr)
	if err != nil {
		r.t.Fatal(err)
	}
	defer c.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		c.Write([]byte("x"))
		select {
		case err := <-done:
			return err == nil
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// callerHears reports whether packets node id sends reach the caller.
func (r *linkFaultRig) callerHears(id int32) bool {
	pc, err := net.ListenPacket("udp", net.JoinHostPort(r.n.prefix+"254", "0"))
	if err != nil {
		r.t.Fatal(err)
	}
	defer pc.Close()
	cmd := r.helper(id, "send", pc.LocalAddr().String())
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	defer cmd.Wait()
	pc.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, _, err = pc.ReadFrom(make([]byte, 64))
	return err == nil
}

// echoes sends n packets to addr, 2ms apart, and counts the answers
// (duplicates included) until 1s after the last.
func echoes(t *testing.T, addr string, n int) (answers int) {
	c, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Answers are counted until a second after the last request went out,
	// however long sending took (a loaded machine stretches the 2 ms gaps).
	var sentAt atomic.Int64 // UnixNano when the last request went out; 0 before
	go func() {
		for i := range n {
			c.Write([]byte(fmt.Sprint(i)))
			time.Sleep(2 * time.Millisecond)
		}
		sentAt.Store(time.Now().UnixNano())
	}()
	buf := make([]byte, 64)
	for {
		c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if _, err := c.Read(buf); err == nil {
			answers++
			continue
		} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
			time.Sleep(10 * time.Millisecond) // e.g. refused: no busy loop
		}
		if at := sentAt.Load(); at != 0 && time.Since(time.Unix(0, at)) > time.Second {
			return answers
		}
	}
}

// TestNetNSOneWay: Outbound leaves a node deaf to nothing and mute to
// everyone; Inbound the reverse; Restore undoes either.
func TestNetNSOneWay(t *testing.T) {
	t.Parallel()
	r := newLinkFaultRig(t)
	if !r.nodeHears(1) || !r.callerHears(1) {
		t.Fatal("node 1 not reachable both ways before any fault")
	}
	for _, d := range []Direction{Outbound, Inbound} {
		if err := r.n.OneWay(r.ctx, 1, d); err != nil {
			t.Fatal(err)
		}
		if got := r.n.Impaired(); !reflect.DeepEqual(got, []int32{1}) {
			t.Fatalf("Impaired = %v, want [1]", got)
		}
		hears, heard := r.nodeHears(1), r.callerHears(1)
		if hears != (d == Outbound) || heard != (d == Inbound) {
			t.Fatalf("one-way %s: node hears the caller %v, caller hears the node %v", d, hears, heard)
		}
		if err := r.n.Restore(r.ctx, 1); err != nil {
			t.Fatal(err)
		}
		if got := r.n.Impaired(); len(got) != 0 {
			t.Fatalf("Impaired after Restore = %v", got)
		}
		if !r.nodeHears(1) || !r.callerHears(1) {
			t.Fatalf("one-way %s: not healed by Restore", d)
		}
	}
	if err := r.n.Restore(r.ctx, 1); err != nil { // idempotent
		t.Fatal(err)
	}
}

// TestNetNSCut: nodes 1 and 2 lose each other, both still reach node 3 and
// the caller.
func TestNetNSCut(t *testing.T) {
	t.Parallel()
	r := newLinkFaultRig(t)
	for _, id := range []int32{1, 2, 3} {
		r.echo(id)
	}
	if err := r.n.Cut(r.ctx, 1, 2); err != nil {
		t.Fatal(err)
	}
	if r.reaches(1, 2) || r.reaches(2, 1) {
		t.Fatal("nodes 1 and 2 still reach each other")
	}
	for _, p := range [][2]int32{{1, 3}, {3, 1}, {2, 3}, {3, 2}} {
		if !r.reaches(p[0], p[1]) {
			t.Fatalf("node %d does not reach node %d", p[0], p[1])
		}
	}
	for _, id := range []int32{1, 2} {
		if err := udpPing(r.n.Addr(id), 2*time.Second); err != nil {
			t.Fatalf("caller -> node %d: %v", id, err)
		}
	}
	if err := r.n.Restore(r.ctx, 1); err != nil {
		t.Fatal(err)
	}
	if !r.reaches(1, 2) || !r.reaches(2, 1) {
		t.Fatal("not healed by Restore")
	}
}

// TestNetNSDegrade: a lossy link loses about the share it is told to, in
// both directions; a duplicating one answers more than it was asked;
// Restore makes it whole.
func TestNetNSDegrade(t *testing.T) {
	r := newLinkFaultRig(t)
	r.echo(1)
	const n = 400
	if got := echoes(t, r.n.Addr(1), n); got != n {
		t.Fatalf("before: %d of %d echoes", got, n)
	}
	// 50% each way: about a quarter of the round trips survive.
	if err := r.n.Degrade(r.ctx, 1, LinkQuality{Loss: 0.5, RateBits: 8_000_000, Latency: 50 * time.Millisecond, Reorder: 0.2}); err != nil {
		t.Fatal(err)
	}
	if got := echoes(t, r.n.Addr(1), n); got < n/10 || got > n/2 {
		t.Fatalf("50%% loss each way: %d of %d echoes, want about %d", got, n, n/4)
	}
	if err := r.n.Degrade(r.ctx, 1, LinkQuality{Duplicate: 0.3}); err != nil { // replaces the loss
		t.Fatal(err)
	}
	if got := echoes(t, r.n.Addr(1), n); got <= n {
		t.Fatalf("30%% duplication: %d echoes of %d", got, n)
	}
	if err := r.n.Restore(r.ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := echoes(t, r.n.Addr(1), n); got != n {
		t.Fatalf("after Restore: %d of %d echoes", got, n)
	}
}
