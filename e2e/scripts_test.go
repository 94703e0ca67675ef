package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"paymentlog/internal/freeport"
)

// TestClusterScript drives scripts/cluster.sh and scripts/kill-leader.sh
// the way the README tells a newcomer to: up, produce, kill the leader,
// produce again, restart the killed node, pause and resume one, rotate
// certificates, revoke one, roll the cluster, read everything back,
// status, down, clean. The cluster runs on free ports
// (PAYMENTLOG_CLUSTER_PORT) under a temporary directory
// (PAYMENTLOG_CLUSTER_DIR) with the test binary (PAYMENTLOG_BIN).
func TestClusterScript(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	c := newScriptCluster(t)
	c.racks = []string{"az1", "az2", "az1"} // PAYMENTLOG_RACKS: kept across restart

	c.script(t, "up")
	env := c.clientEnv(t)

	first := c.produce(t, env, "before", 200)
	before := c.pids(t)
	// Three nodes share the machine: each runs at its share of the CPUs
	// (or at the GOMAXPROCS this test runs with).
	want := fmt.Sprintf("GOMAXPROCS=%d", max(1, runtime.NumCPU()/3))
	if v := os.Getenv("GOMAXPROCS"); v != "" {
		want = "GOMAXPROCS=" + v
	}
	for n, p := range before {
		environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p))
		if err != nil {
			t.Errorf("node %d (pid %d): %v", n, p, err)
		} else if !slices.Contains(strings.Split(string(environ), "\x00"), want) {
			t.Errorf("node %d (pid %d) runs without %s", n, p, want)
		}
	}
	victim := c.killLeader(t, "payments", 0)
	if processAlive(before[victim]) {
		t.Fatalf("node %d (pid %d) still runs after kill-leader.sh", victim, before[victim])
	}
	second := c.produce(t, env, "after-kill", 200)
	if l := strings.TrimSpace(c.script(t, "leader", "payments", "0")); l == strconv.Itoa(victim) {
		t.Errorf("partition 0 is still led by the killed node %d", victim)
	}
	c.script(t, "restart", strconv.Itoa(victim))

	other := victim%3 + 1
	c.script(t, "pause", strconv.Itoa(other))
	if st := c.script(t, "status"); !strings.Contains(st, fmt.Sprintf("node %d: paused", other)) {
		t.Errorf("status with node %d paused:\n%s", other, st)
	}
	c.script(t, "resume", strconv.Itoa(other))
	third := c.produce(t, env, "after-resume", 100)

	// The README's `topic alter`: the topic grows from 3 to 5 partitions
	// and everything reads back from all of them. New partitions need RF
	// live brokers: the resumed node was fenced while paused and may not
	// be unfenced yet (produce above needed only min ISR).
	c.waitAllAlive(t, env)
	alter := exec.Command(binary, "topic", "alter", "payments", "--partitions", "5")
	alter.Env = env
	if out, err := alter.CombinedOutput(); err != nil || string(out) != "topic payments now has 5 partitions\n" {
		t.Fatalf("topic alter: %v\n%s", err, out)
	}
	fourth := c.produce(t, env, "after-alter", 100)
	// The nodes' audit trails (--audit-log beside each node's log) record
	// the alter, by the client certificate, once: where it was answered.
	// Each trail starts with its node's start line, and the leaders record
	// the client's writes to payments (access lines).
	var alters, writes []string
	for n := 1; n <= 3; n++ {
		b, err := os.ReadFile(filepath.Join(c.dir, fmt.Sprintf("node%d.audit.log", n)))
		if err != nil {
			t.Fatalf("node %d's audit trail: %v", n, err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if !strings.Contains(lines[0], `"event":"node"`) || !strings.Contains(lines[0], `"op":"start"`) ||
			!strings.Contains(lines[0], `"previous":"new audit log"`) {
			t.Errorf("node %d's first audit line %q; want its start line, a new audit log", n, lines[0])
		}
		for _, l := range lines {
			if strings.Contains(l, `"op":"CreatePartitions"`) {
				alters = append(alters, l)
			}
			if strings.Contains(l, `"event":"access"`) && strings.Contains(l, `"op":"write"`) &&
				strings.Contains(l, `"principal":"User:client"`) && strings.Contains(l, `"resource_name":"payments"`) {
				writes = append(writes, l)
			}
		}
	}
	if len(writes) == 0 {
		t.Errorf("no access line for the client's writes to payments")
	}
	if len(alters) != 1 || !strings.Contains(alters[0], `"principal":"User:client","authenticated":true`) ||
		!strings.Contains(alters[0], `"result":"ok"`) || !strings.Contains(alters[0], `"Count":5`) {
		t.Errorf("audit lines of topic alter: %q; want one, by User:client, ok, to 5 partitions", alters)
	}
	for n := 1; n <= 3; n++ {
		f := filepath.Join(c.dir, fmt.Sprintf("node%d.audit.log", n))
		if out, err := exec.Command(binary, "log", "audit-verify", f).CombinedOutput(); err != nil || !strings.Contains(string(out), "chain intact") {
			t.Errorf("log audit-verify %s: %v\n%s", f, err, out)
		}
	}

	// The README's certificate rotation: a new CA and new certificates for
	// every node and the client, the old CA retired, no node restarted.
	pidsBefore := c.pids(t)
	rot := c.script(t, "rotate-certs")
	for _, want := range []string{"3/3: the old CA retired", "current CA"} {
		if !strings.Contains(rot, want) {
			t.Errorf("rotate-certs output lacks %q:\n%s", want, rot)
		}
	}
	if strings.Count(rot, "  ok\n") != 4 || strings.Contains(rot, "retiring") {
		t.Errorf("after rotate-certs, cert list should show 4 certificates ok and no retiring CA:\n%s", rot)
	}
	if !maps.Equal(c.pids(t), pidsBefore) {
		t.Errorf("rotate-certs restarted nodes: pids %v, before %v", c.pids(t), pidsBefore)
	}
	fifth := c.produce(t, env, "after-rotation", 100)

	// The README's revocation: a client certificate is let in, then
	// revoked (cluster.sh revoke-cert: cert revoke, then SIGHUP to every
	// node, waiting for each to reload); then it is refused.
	certs := filepath.Join(c.dir, "certs")
	if out, err := exec.Command(binary, "cert", "issue", "--dir", certs, "--name", "mallory").CombinedOutput(); err != nil {
		t.Fatalf("cert issue mallory: %v\n%s", err, out)
	}
	listAs := func(name string) ([]byte, error) {
		cmd := exec.Command(binary, "topic", "list", "--timeout", "3s")
		cmd.Env = append(slices.Clone(env), "PAYMENTLOG_CLIENT_CERT_NAME="+name)
		return cmd.CombinedOutput()
	}
	if out, err := listAs("mallory"); err != nil || !strings.Contains(string(out), "payments") {
		t.Fatalf("topic list as mallory before the revocation: %v\n%s", err, out)
	}
	if out := c.script(t, "revoke-cert", "mallory"); !strings.Contains(out, "revoked mallory (serial ") {
		t.Fatalf("revoke-cert mallory printed:\n%s", out)
	}
	if out, err := listAs("mallory"); err == nil {
		t.Fatalf("topic list as the revoked mallory succeeded:\n%s", out)
	}
	if out, err := listAs("client"); err != nil {
		t.Fatalf("topic list as client after mallory's revocation: %v\n%s", err, out)
	}

	// The README's rolling restart: every node restarted in turn, each
	// once it is safe to stop and the next once it is ready again, the
	// active controller last.
	pidsBefore = c.pids(t)
	roll := c.script(t, "roll")
	m := regexp.MustCompile(`node (\d) is the active controller: it goes last\n`).FindStringSubmatch(roll)
	if m == nil || !strings.HasSuffix(strings.TrimSpace(roll), "rolled nodes "+strings.Join(slices.DeleteFunc([]string{"1", "2", "3"}, func(n string) bool { return n == m[1] }), " ")+" "+m[1]) ||
		strings.Count(roll, "waiting until it is ready") != 3 || strings.Count(roll, "waiting until it is safe to stop") != 3 {
		t.Errorf("roll printed:\n%s", roll)
	}
	for n, p := range c.pids(t) {
		if p == pidsBefore[n] {
			t.Errorf("roll did not restart node %d (pid %d)", n, p)
		}
	}
	sixth := c.produce(t, env, "after-roll", 100)

	got := c.consumeAll(t, env)
	for _, acks := range []map[string]pos{first, second, third, fourth, fifth, sixth} {
		for value, at := range acks {
			if g, ok := got[at]; !ok {
				t.Errorf("%q acknowledged at %v is missing", value, at)
			} else if g != value {
				t.Errorf("%v holds %q, acknowledged for %q", at, g, value)
			}
		}
	}
	if want := len(first) + len(second) + len(third) + len(fourth) + len(fifth) + len(sixth); len(got) != want {
		t.Errorf("read back %d records, %d acknowledged", len(got), want)
	}

	// The README's consumer groups: a group reads the topic in two runs
	// of consume --group, with the active controller, which keeps the
	// committed offsets, killed between them; together they read every
	// record once.
	half := len(got) / 2
	runs := []map[pos]string{c.consume(t, env, "--group", "billing", "--max", strconv.Itoa(half))}
	ctrl := c.activeController(t, env)
	c.script(t, "kill", strconv.Itoa(ctrl))
	runs = append(runs, c.consume(t, env, "--group", "billing", "--exit-at-end"))
	c.script(t, "restart", strconv.Itoa(ctrl))
	if len(runs[0]) != half {
		t.Errorf("consume --group --max %d read %d records", half, len(runs[0]))
	}
	for at, v := range runs[1] {
		if _, twice := runs[0][at]; twice {
			t.Errorf("%v (%q) read by both runs of the group", at, v)
		}
		runs[0][at] = v
	}
	if !maps.Equal(runs[0], got) {
		t.Errorf("the group's two runs read %d records, not the %d of the topic", len(runs[0]), len(got))
	}

	st := c.script(t, "status")
	for n := 1; n <= 3; n++ {
		if !strings.Contains(st, fmt.Sprintf("node %d: running", n)) {
			t.Errorf("status does not show node %d running:\n%s", n, st)
		}
	}
	c.script(t, "down")
	if left := c.procs(); len(left) > 0 {
		t.Errorf("processes of this cluster still run after down: %v", left)
	}
	c.script(t, "clean")
	if _, err := os.Stat(c.dir); !os.IsNotExist(err) {
		t.Errorf("clean left %s (stat: %v)", c.dir, err)
	}
}

// TestClusterScriptPortTaken: when another process holds the first node's
// port, up fails naming the port and the way out.
func TestClusterScriptPortTaken(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	c := newScriptCluster(t)
	hold, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", c.port))
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	out, err := c.run(t, "up")
	if err == nil {
		t.Fatalf("up succeeded with port %d taken:\n%s", c.port, out)
	}
	for _, want := range []string{"node 1 exited", "address already in use", "PAYMENTLOG_CLUSTER_PORT"} {
		if !strings.Contains(out, want) {
			t.Errorf("up's output lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "address already in use") > 1 {
		t.Errorf("up's output repeats the bind error (an earlier run's log?):\n%s", out)
	}
}

// TestClusterScriptErrors: the script's usage errors are one line on stderr
// and exit status 2, like paymentlog's own; acting on a node that is not
// running is one line and exit status 1. No cluster is started.
func TestClusterScriptErrors(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	c := newScriptCluster(t)
	for _, tc := range []struct {
		args  []string
		code  int
		want  string
		racks []string
	}{
		{[]string{"kill", "4"}, 2, "node must be 1, 2 or 3 (got '4')", nil},
		{[]string{"kill"}, 2, "node must be 1, 2 or 3", nil},
		{[]string{"pause", "x"}, 2, "node must be 1, 2 or 3 (got 'x')", nil},
		{[]string{"restart", "0"}, 2, "node must be 1, 2 or 3 (got '0')", nil},
		{[]string{"leader", "payments"}, 2, "usage: cluster.sh leader TOPIC PARTITION", nil},
		{[]string{"start"}, 2, "unknown command 'start'", nil},
		{[]string{"kill", "3"}, 1, "node 3 is not running", nil},
		{[]string{"pause", "2"}, 1, "node 2 is not running", nil},
		{[]string{"resume", "1"}, 1, "node 1 is not running", nil},
		{[]string{"up"}, 2, "PAYMENTLOG_RACKS names 4 racks for 3 nodes", []string{"a", "b", "c", "d"}},
	} {
		c.racks = tc.racks
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, filepath.Join(c.root, "scripts", "cluster.sh"), tc.args...)
		cmd.Dir, cmd.Env = c.root, c.scriptEnv()
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		cancel()
		code := exitStatus(t, err, fmt.Sprintf("cluster.sh %v", tc.args))
		if code != tc.code || stdout.Len() != 0 || strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("cluster.sh %v: exit %d, stdout %q, stderr %q; want exit %d and one line with %q",
				tc.args, code, stdout.String(), stderr.String(), tc.code, tc.want)
		}
	}
	c.racks = nil
	// status of a cluster that is not running: every node stopped, no pid,
	// and a hint instead of a client error about missing certificates.
	out := c.script(t, "status")
	for n := 1; n <= 3; n++ {
		if !strings.Contains(out, fmt.Sprintf("node %d: stopped\n", n)) {
			t.Errorf("status does not show node %d stopped (without a pid):\n%s", n, out)
		}
	}
	if !strings.Contains(out, "no node of the cluster") || strings.Contains(out, "paymentlog:") {
		t.Errorf("status of a stopped cluster:\n%s", out)
	}

	// restart of one node of a stopped cluster: it cannot become alive
	// without a controller, and the failure says why.
	rctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(rctx, filepath.Join(c.root, "scripts", "cluster.sh"), "restart", "3")
	cmd.Dir, cmd.Env = c.root, append(c.scriptEnv(), "PAYMENTLOG_READY_TIMEOUT=3")
	b, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(b), "no active controller: it needs 2 of the 3 nodes running") {
		t.Errorf("restart 3 of a stopped cluster: %v\n%s", err, b)
	}
}

// pos is a record's place in the log.
type pos struct {
	Partition int32 `json:"partition"`
	Offset    int64 `json:"offset"`
}

func (p pos) String() string { return fmt.Sprintf("partition %d offset %d", p.Partition, p.Offset) }

type scriptCluster struct {
	root  string   // the module root (scripts/ lives there)
	dir   string   // PAYMENTLOG_CLUSTER_DIR
	port  int      // PAYMENTLOG_CLUSTER_PORT
	racks []string // PAYMENTLOG_RACKS, when set: waitAllAlive checks each node's
}

func newScriptCluster(t *testing.T) *scriptCluster {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	c := &scriptCluster{root: root, dir: filepath.Join(t.TempDir(), "cluster"), port: freeport.Run(t, 3)}
	t.Cleanup(func() {
		if out, err := c.run(t, "down"); err != nil {
			t.Logf("cleanup: cluster.sh down: %v\n%s", err, out)
		}
		// A node whose pid file the script lost would outlive the test.
		for _, p := range c.procs() {
			t.Logf("cleanup: killing pid %d, left running", p)
			if proc, err := os.FindProcess(p); err == nil {
				_ = proc.Kill()
			}
		}
	})
	return c
}

// run runs scripts/NAME (cluster.sh unless args[0] ends in .sh) and returns
// its combined output.
func (c *scriptCluster) run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	script := "cluster.sh"
	if len(args) > 0 && strings.HasSuffix(args[0], ".sh") {
		script, args = args[0], args[1:]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(c.root, "scripts", script), args...)
	cmd.Dir = c.root
	cmd.Env = c.scriptEnv()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// bench runs `paymentlog bench MODE --bootstrap` against the cluster with
// the scripts as kill and restart commands, writing its JSON to out.
func (c *scriptCluster) bench(t *testing.T, mode string, trials int, out string) {
	t.Helper()
	script := filepath.Join(c.root, "scripts", "cluster.sh")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "bench", mode, "--trials", strconv.Itoa(trials), "--json", out,
		"--bootstrap", fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d", c.port, c.port+1, c.port+2),
		"--tls-dir", filepath.Join(c.dir, "certs"),
		"--kill-cmd", script+" kill {id}", "--restart-cmd", script+" restart {id}")
	cmd.Env = c.scriptEnv()
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bench %s: %v\n%s", mode, err, b)
	}
}

// scriptEnv is the environment that points the scripts at this cluster.
func (c *scriptCluster) scriptEnv() []string {
	env := append(os.Environ(),
		"PAYMENTLOG_BIN="+binary, "PAYMENTLOG_NO_BUILD=1",
		"PAYMENTLOG_CLUSTER_DIR="+c.dir, "PAYMENTLOG_CLUSTER_PORT="+strconv.Itoa(c.port),
		"PAYMENTLOG_READY_TIMEOUT=60", "PAYMENTLOG_STOP_TIMEOUT=20")
	if c.racks != nil {
		env = append(env, "PAYMENTLOG_RACKS="+strings.Join(c.racks, ","))
	}
	return env
}

// script runs a script that must succeed.
func (c *scriptCluster) script(t *testing.T, args ...string) string {
	t.Helper()
	out, err := c.run(t, args...)
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// clientEnv is what `eval "$(scripts/cluster.sh env)"` exports.
func (c *scriptCluster) clientEnv(t *testing.T) []string {
	t.Helper()
	line := strings.TrimSpace(c.script(t, "env"))
	fields := strings.Fields(strings.TrimPrefix(line, "export "))
	if !strings.HasPrefix(line, "export ") || len(fields) == 0 {
		t.Fatalf("cluster.sh env printed %q", line)
	}
	for _, f := range fields {
		if !strings.HasPrefix(f, "PAYMENTLOG_") || !strings.Contains(f, "=") {
			t.Fatalf("cluster.sh env: unexpected word %q in %q", f, line)
		}
	}
	return append(os.Environ(), fields...)
}

// produce sends n records "PREFIX-i" through `paymentlog produce --json`
// and returns where each was acknowledged.
func (c *scriptCluster) produce(t *testing.T, env []string, prefix string, n int) map[string]pos {
	t.Helper()
	var in bytes.Buffer
	values := make([]string, n)
	for i := range values {
		values[i] = fmt.Sprintf("%s-%d", prefix, i)
		fmt.Fprintln(&in, values[i])
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "produce", "payments", "--json")
	cmd.Env, cmd.Stdin = env, &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("produce %s: %v\n%s", prefix, err, stderr.String())
	}
	acks := make(map[string]pos, n)
	sc := bufio.NewScanner(bytes.NewReader(out))
	for i := 0; sc.Scan(); i++ {
		var p pos
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil || i >= n {
			t.Fatalf("produce %s: line %d %q: %v", prefix, i+1, sc.Text(), err)
		}
		acks[values[i]] = p
	}
	if len(acks) != n {
		t.Fatalf("produce %s: %d acknowledgements for %d records\n%s", prefix, len(acks), n, stderr.String())
	}
	return acks
}

// waitAllAlive waits until `cluster status --json` shows every node alive.
func (c *scriptCluster) waitAllAlive(t *testing.T, env []string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last string
	for {
		cmd := exec.Command(binary, "cluster", "status", "--json")
		cmd.Env = env
		out, err := cmd.Output()
		var st struct {
			Nodes []struct {
				ID    int    `json:"id"`
				State string `json:"state"`
				Rack  string `json:"rack"`
			} `json:"nodes"`
		}
		if err == nil && json.Unmarshal(out, &st) == nil && len(st.Nodes) == 3 {
			alive := 0
			for _, n := range st.Nodes {
				if n.State == "alive" {
					alive++
				}
			}
			if alive == 3 {
				for _, n := range st.Nodes {
					if c.racks != nil && (n.ID < 1 || n.ID > len(c.racks) || n.Rack != c.racks[n.ID-1]) {
						t.Errorf("node %d registered rack %q; PAYMENTLOG_RACKS=%s", n.ID, n.Rack, strings.Join(c.racks, ","))
					}
				}
				return
			}
		}
		last = fmt.Sprintf("%v %s", err, out)
		if time.Now().After(deadline) {
			t.Fatalf("not every node alive after 30s; last status: %s", last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// killLeader runs scripts/kill-leader.sh and returns the node it killed.
func (c *scriptCluster) killLeader(t *testing.T, topic string, partition int) int {
	t.Helper()
	out := c.script(t, "kill-leader.sh", topic, strconv.Itoa(partition))
	m := regexp.MustCompile(`is led by node (\d)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("kill-leader.sh did not name the leader:\n%s", out)
	}
	n, _ := strconv.Atoi(m[1])
	if !strings.Contains(out, fmt.Sprintf("killed node %d", n)) {
		t.Fatalf("kill-leader.sh did not kill node %d:\n%s", n, out)
	}
	return n
}

// consumeAll reads every partition from the beginning to its end.
func (c *scriptCluster) consumeAll(t *testing.T, env []string) map[pos]string {
	t.Helper()
	return c.consume(t, env, "--from", "beginning", "--exit-at-end")
}

// activeController reads the active controller from cluster status.
func (c *scriptCluster) activeController(t *testing.T, env []string) int {
	t.Helper()
	cmd := exec.Command(binary, "cluster", "status")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	m := regexp.MustCompile(`Active controller: (\d+)`).FindSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("cluster status: %v\n%s", err, out)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// consume runs consume payments --json with args and returns what it
// printed, by position (a position printed twice is an error).
func (c *scriptCluster) consume(t *testing.T, env []string, args ...string) map[pos]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append([]string{"consume", "payments", "--json"}, args...)...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("consume: %v\n%s", err, stderr.String())
	}
	got := make(map[pos]string)
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var r struct {
			pos
			Value string `json:"value"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("consume: %q: %v", sc.Text(), err)
		}
		if prev, dup := got[r.pos]; dup {
			t.Errorf("consume returned %v twice (%q, %q)", r.pos, prev, r.Value)
		}
		got[r.pos] = r.Value
	}
	return got
}

// pids reads the script's pid files (node id -> pid).
func (c *scriptCluster) pids(t *testing.T) map[int]int {
	t.Helper()
	out := make(map[int]int)
	for n := 1; n <= 3; n++ {
		b, err := os.ReadFile(filepath.Join(c.dir, fmt.Sprintf("node%d.pid", n)))
		if err != nil {
			continue
		}
		if p, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			out[n] = p
		}
	}
	return out
}

// procs lists the live processes whose command line names this cluster's
// directory: its nodes, whatever their pid files say.
func (c *scriptCluster) procs() []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(c.dir+"/")) && processAlive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// processAlive reports whether pid names a live process (not a zombie).
func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// TestBenchAgainstScriptCluster runs the README's `paymentlog bench
// --bootstrap ... --kill-cmd 'scripts/cluster.sh kill {id}' --restart-cmd
// 'scripts/cluster.sh restart {id}'` against a cluster.sh cluster, shortened
// to two failover trials and one controller failover, and checks the JSON:
// every trial measured, nothing acknowledged lost, every node back afterwards.
// (Nothing else runs `bench` in --bootstrap mode, where the kills go through
// the user's commands.)
func TestBenchAgainstScriptCluster(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	c := newScriptCluster(t)
	c.script(t, "up")
	out := filepath.Join(t.TempDir(), "bench.json")
	c.bench(t, "failover", 2, out)
	var rep struct {
		Failover struct {
			Trials []struct {
				UnavailableMs float64 `json:"unavailable_ms"`
			} `json:"trials"`
			LostRecords *int64 `json:"lost_records"`
			Acked       int64  `json:"acked"`
			Verified    int64  `json:"verified"`
			Duplicates  int64  `json:"duplicates"`
		} `json:"failover"`
		Config map[string]any `json:"config"`
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("bench JSON: %v\n%s", err, b)
	}
	if n := len(rep.Failover.Trials); n != 2 {
		t.Fatalf("%d failover trials in the JSON, want 2:\n%s", n, b)
	}
	for i, tr := range rep.Failover.Trials {
		if tr.UnavailableMs <= 0 {
			t.Errorf("trial %d: unavailable_ms %v", i, tr.UnavailableMs)
		}
	}
	if rep.Failover.LostRecords == nil || *rep.Failover.LostRecords != 0 {
		t.Errorf("lost_records %v, want 0", rep.Failover.LostRecords)
	}
	if f := rep.Failover; f.Acked == 0 || f.Verified != f.Acked || f.Duplicates != 0 {
		t.Errorf("acked %d, verified %d, duplicates %d: want every acknowledged record verified, no duplicate", f.Acked, f.Verified, f.Duplicates)
	}

	c.bench(t, "controller-failover", 1, out)
	var crep struct {
		ControllerFailover struct {
			Ms struct {
				Max float64 `json:"max"`
			} `json:"ms"`
		} `json:"controller_failover"`
	}
	if b, err = os.ReadFile(out); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &crep); err != nil || crep.ControllerFailover.Ms.Max <= 0 {
		t.Fatalf("controller failover JSON (%v):\n%s", err, b)
	}
	if st := c.script(t, "status"); strings.Count(st, ": running") != 3 {
		t.Errorf("after the bench not every node runs:\n%s", st)
	}
}

// exitStatus is the exit status of a command run returned err (0 for nil);
// any other failure (it did not start, or was killed) fails the test.
func exitStatus(t *testing.T, err error, what string) int {
	t.Helper()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.Exited() {
		return exit.ExitCode()
	}
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return 0
}
