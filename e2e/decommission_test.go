package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"paymentlog/internal/freeport"
)

// TestDecommissionBroker walks README's "Decommissioning a broker" on real
// processes under mutual TLS: a fourth, broker-only node (its own node
// certificate) joins the scripts/cluster.sh cluster and gets replicas of a
// new topic; `topic reassign --drain 4` moves them off, the node is killed,
// `cluster unregister --id 4` (with the client certificate) removes it, and
// cluster status lists three nodes; every record is still read back.
func TestDecommissionBroker(t *testing.T) {
	t.Parallel()
	c := newScriptCluster(t)
	c.script(t, "up")
	env := c.clientEnv(t)
	certs := filepath.Join(c.dir, "certs")
	if out, err := exec.Command(binary, "cert", "issue", "--dir", certs, "--name", "node4", "--node-id", "4", "--host", "127.0.0.1").CombinedOutput(); err != nil {
		t.Fatalf("cert issue node4: %v\n%s", err, out)
	}
	node4 := exec.Command(binary, "node", "start", "--id", "4", "--addr", fmt.Sprintf("127.0.0.1:%d", freeport.Run(t, 1)),
		"--data-dir", filepath.Join(c.dir, "node4"), "--tls-dir", certs, "--cert-name", "node4",
		"--controllers", fmt.Sprintf("1@127.0.0.1:%d,2@127.0.0.1:%d,3@127.0.0.1:%d", c.port, c.port+1, c.port+2))
	if err := node4.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = node4.Wait(); close(exited) }()
	t.Cleanup(func() { _ = node4.Process.Kill(); <-exited })

	cli := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, binary, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("paymentlog %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	status := func() map[int]string {
		cmd := exec.Command(binary, "cluster", "status", "--json")
		cmd.Env = env
		out, err := cmd.Output()
		var st struct {
			Nodes []struct {
				ID    int    `json:"id"`
				State string `json:"state"`
			} `json:"nodes"`
		}
		if err != nil || json.Unmarshal(out, &st) != nil {
			return nil
		}
		m := map[int]string{}
		for _, n := range st.Nodes {
			m[n.ID] = n.State
		}
		return m
	}
	waitStatus := func(what string, ok func(map[int]string) bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for st := status(); !ok(st); st = status() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; cluster status: %v", what, st)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitStatus("node 4 alive", func(st map[int]string) bool { return st[4] == "alive" })

	onNode4 := func() int {
		t.Helper()
		var d struct {
			Partitions []struct {
				Replicas []int `json:"replicas"`
			} `json:"partitions"`
		}
		out := cli("topic", "describe", "orders", "--json")
		if err := json.Unmarshal([]byte(out), &d); err != nil || len(d.Partitions) != 4 {
			t.Fatalf("describe orders: %v %s", err, out)
		}
		n := 0
		for _, p := range d.Partitions {
			if slices.Contains(p.Replicas, 4) {
				n++
			}
		}
		return n
	}
	cli("topic", "create", "orders", "--partitions", "4", "--replication-factor", "3")
	if n := onNode4(); n == 0 {
		t.Fatal("no partition of orders was placed on node 4")
	}
	var in strings.Builder
	for i := range 200 {
		fmt.Fprintf(&in, "order-%d\n", i)
	}
	produce := exec.Command(binary, "produce", "orders")
	produce.Env, produce.Stdin = env, strings.NewReader(in.String())
	if out, err := produce.CombinedOutput(); err != nil {
		t.Fatalf("produce: %v\n%s", err, out)
	}

	// Still alive, and still holding replicas: refused.
	unregister := exec.Command(binary, "cluster", "unregister", "--id", "4")
	unregister.Env = env
	if out, err := unregister.CombinedOutput(); err == nil || !strings.Contains(string(out), "broker 4 is alive") {
		t.Fatalf("unregister of a live broker: %v\n%s", err, out)
	}
	cli("topic", "reassign", "orders", "--drain", "4")
	if n := onNode4(); n != 0 {
		t.Fatalf("%d partitions of orders still on node 4 after the drain", n)
	}
	if err := node4.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	waitStatus("node 4 fenced", func(st map[int]string) bool { return st[4] == "fenced" })
	if out := cli("cluster", "unregister", "--id", "4"); out != "unregistered broker 4\n" {
		t.Fatalf("unregister: %q", out)
	}
	if st := status(); len(st) != 3 || st[4] != "" {
		t.Fatalf("cluster status after unregistering: %v", st)
	}
	consume := exec.Command(binary, "consume", "orders", "--from", "beginning", "--exit-at-end")
	consume.Env = env
	out, err := consume.Output()
	if err != nil || strings.Count(string(out), "\n") != 200 {
		t.Fatalf("consume orders: %v, %d lines", err, strings.Count(string(out), "\n"))
	}
}
