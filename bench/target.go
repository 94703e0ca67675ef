package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strings"

	"paymentlog/bench/localcluster"
	"paymentlog/quic"
)

// target is the cluster under test: a local one the bench started, or an
// external one reached with --bootstrap and controlled with shell commands.
type target interface {
	bootstrap() []string
	tls() quic.TLSConfig
	// canKill reports whether kill and restart are available.
	canKill() bool
	// kill SIGKILLs node id; restart starts it again.
	kill(ctx context.Context, id int32) error
	// exactKill reports whether kill sends the SIGKILL itself as it starts
	// (so the instant before the call is the kill's), rather than running
	// a command that sends it at some point before returning.
	exactKill() bool
	restart(ctx context.Context, id int32) error
	// info describes the cluster for the report's config.
	info() map[string]any
	close() error
}

// localTarget is a cluster of child processes.
type localTarget struct {
	c          *localcluster.Cluster
	ns         *localcluster.NetNS // --netns; nil on loopback
	args       []string
	gomaxprocs int // each node's GOMAXPROCS; 0: Go's default
	// benchProcs is the bench process's own GOMAXPROCS while the cluster
	// runs (0: left alone), and restoreProcs what close puts back.
	benchProcs, restoreProcs int
}

func startLocal(ctx context.Context, cfg Config, log *slog.Logger) (*localTarget, error) {
	bin := cfg.Binary
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("bench: cannot find the paymentlog binary: %w", err)
		}
		bin = exe
	}
	args := []string{"--fsync", cfg.Throughput.Fsync}
	args = append(args, cfg.NodeArgs...)
	procs := nodeGOMAXPROCS(cfg.NodeGOMAXPROCS, runtime.NumCPU(), cfg.Nodes)
	var env []string
	if procs > 0 {
		env = append(env, fmt.Sprintf("GOMAXPROCS=%d", procs))
	}
	opts := localcluster.Options{
		Binary:    bin,
		Nodes:     cfg.Nodes,
		BaseDir:   cfg.BaseDir,
		Keep:      cfg.KeepDir,
		Metrics:   cfg.Metrics || cfg.ProfileDir != "",
		ExtraArgs: args,
		Env:       env,
		Logger:    log,
	}
	var ns *localcluster.NetNS
	if cfg.NetNS {
		if err := localcluster.NetNSAvailable(); err != nil {
			return nil, fmt.Errorf("bench: --netns: %w", err)
		}
		localcluster.CleanupStaleNetNS(ctx)
		var err error
		if ns, err = localcluster.NewNetNS(ctx); err != nil {
			return nil, fmt.Errorf("bench: --netns: %w", err)
		}
		ns.Apply(&opts)
	}
	c, err := localcluster.Start(ctx, opts)
	if err != nil {
		if ns != nil {
			ns.Close()
		}
		return nil, err
	}
	t := &localTarget{c: c, ns: ns, args: args, gomaxprocs: procs}
	if cfg.NodeGOMAXPROCS < 0 {
		// The bench's producers and consumers share the machine with the
		// nodes too, so they get a node's share as well. At every CPU, the
		// load generator's second P woke threads to find work the nodes held
		// the CPUs for: on 2 CPUs, five alternating pairs each, the bench's
		// CPU per produce request at half load 1.22 -> 0.97 ms and its context
		// switches 15 -> 9, at full load its CPU per MB 6.43 -> 5.34 ms
		// (lower in 5 of 5 pairs each), throughput unchanged. The baselines
		// (transport, disk) ran before, at every CPU.
		t.benchProcs = procs
		t.restoreProcs = runtime.GOMAXPROCS(procs)
	}
	return t, nil
}

// nodeGOMAXPROCS resolves --node-gomaxprocs: a setting > 0 is taken as it
// is, 0 leaves each node Go's default (every CPU), and < 0 gives each node
// its share of the machine, cpus ÷ nodes rounded down, at least 1. The
// local nodes share the machine's CPUs with one another and with the
// bench, as containers limited to that share would (where Go sets
// GOMAXPROCS from the container's CPU limit). Left at every CPU, each
// node's scheduler wakes idle threads to look for work that the other
// processes hold the CPUs for: on 2 CPUs, 4 alternating pairs of `bench
// throughput` gave 21% less node CPU per produce request at half load with
// GOMAXPROCS=1 (README, "What they mean").
func nodeGOMAXPROCS(setting, cpus, nodes int) int {
	if setting >= 0 {
		return setting
	}
	return max(1, cpus/max(nodes, 1))
}

func (t *localTarget) bootstrap() []string { return t.c.Bootstrap() }
func (t *localTarget) tls() quic.TLSConfig { return t.c.ClientTLS() }
func (t *localTarget) canKill() bool       { return true }
func (t *localTarget) exactKill() bool     { return true }

func (t *localTarget) kill(_ context.Context, id int32) error { return t.c.Kill(id) }

func (t *localTarget) restart(ctx context.Context, id int32) error {
	err := t.c.StartNode(ctx, id)
	if errors.Is(err, localcluster.ErrRunning) {
		return nil
	}
	return err
}

func (t *localTarget) info() map[string]any {
	nodes := []map[string]any{}
	for _, n := range t.c.Nodes() {
		m := map[string]any{"id": n.ID, "addr": n.Addr, "log": n.LogPath, "data_dir": n.DataDir}
		if n.MetricsAddr != "" {
			m["metrics_addr"] = n.MetricsAddr
		}
		nodes = append(nodes, m)
	}
	return map[string]any{"kind": "local", "dir": t.c.Dir(), "node_args": t.args, "node_gomaxprocs": t.gomaxprocs, "bench_gomaxprocs": t.benchProcs, "netns": t.ns != nil, "nodes": nodes}
}

// metricsAddrs maps node ids to their --metrics-addr.
func (t *localTarget) metricsAddrs() map[int32]string {
	m := map[int32]string{}
	for _, n := range t.c.Nodes() {
		if n.MetricsAddr != "" {
			m[n.ID] = n.MetricsAddr
		}
	}
	return m
}

// pids lists the running nodes' process ids.
func (t *localTarget) pids() []int {
	var out []int
	for _, n := range t.c.Nodes() {
		if n.PID != 0 {
			out = append(out, n.PID)
		}
	}
	return out
}

// crashes reports nodes that died on their own.
func (t *localTarget) crashes() []localcluster.Crash { return t.c.Crashes() }

func (t *localTarget) close() error {
	err := t.c.Close()
	if t.ns != nil {
		err = errors.Join(err, t.ns.Close())
	}
	if t.restoreProcs > 0 {
		runtime.GOMAXPROCS(t.restoreProcs)
	}
	return err
}

// externalTarget is a cluster the user runs.
type externalTarget struct {
	addrs      []string
	tlsCfg     quic.TLSConfig
	killCmd    string
	restartCmd string
}

func (t *externalTarget) bootstrap() []string { return t.addrs }
func (t *externalTarget) tls() quic.TLSConfig { return t.tlsCfg }
func (t *externalTarget) canKill() bool       { return t.killCmd != "" && t.restartCmd != "" }
func (t *externalTarget) exactKill() bool     { return false }

func (t *externalTarget) kill(ctx context.Context, id int32) error {
	return runShell(ctx, expandCmd(t.killCmd, id))
}

func (t *externalTarget) restart(ctx context.Context, id int32) error {
	return runShell(ctx, expandCmd(t.restartCmd, id))
}

func (t *externalTarget) info() map[string]any {
	return map[string]any{"kind": "external", "bootstrap": t.addrs, "kill_cmd": t.killCmd, "restart_cmd": t.restartCmd}
}

func (t *externalTarget) close() error { return nil }

// runShell runs a --kill-cmd or --restart-cmd with sh -c.
func runShell(ctx context.Context, cmdline string) error {
	out, err := exec.CommandContext(ctx, "/bin/sh", "-c", cmdline).CombinedOutput()
	if err != nil {
		return fmt.Errorf("bench: %q: %w: %s", cmdline, err, strings.TrimSpace(string(out)))
	}
	return nil
}
