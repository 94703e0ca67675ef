package localcluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"paymentlog/quic"
)

// Cluster is a running local cluster. Its methods are safe for concurrent use.
// See the package documentation for the lifecycle.
type Cluster struct {
	opts        Options
	log         *slog.Logger
	dir         string
	certDir     string // empty with Options.Insecure
	controllers string // the --controllers value
	nodes       []*nodeProc
	sp          *spawner

	closeOnce sync.Once
	closeErr  error

	mu struct {
		sync.Mutex
		closed  bool
		crashes []Crash
		ep      *quic.Endpoint // client-only endpoint of the metadata helpers; nil until first used
	}
}

// Start creates the directory and certificates, starts every node and, unless
// opts.NoWait, waits until the cluster is ready (see WaitReady). On error
// everything it started is cleaned up.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	opts = opts.withDefaults()
	if opts.Binary == "" {
		return nil, errors.New("localcluster: Options.Binary is required")
	}
	bin, err := filepath.Abs(opts.Binary)
	if err != nil {
		return nil, fmt.Errorf("localcluster: binary: %w", err)
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("localcluster: binary: %w", err)
	}
	opts.Binary = bin
	dir, err := os.MkdirTemp(opts.BaseDir, "paymentlog-cluster-")
	if err != nil {
		return nil, fmt.Errorf("localcluster: %w", err)
	}
	c := &Cluster{opts: opts, log: opts.Logger.With("cluster", dir), dir: dir, sp: newSpawner()}
	if err := c.init(ctx); err != nil {
		c.Close()
		return nil, err
	}
	for _, n := range c.nodes {
		if err := c.startNode(ctx, n); err != nil {
			c.Close()
			return nil, err
		}
	}
	if !opts.NoWait {
		if err := c.WaitReady(ctx); err != nil {
			var tails strings.Builder
			for _, n := range c.nodes {
				fmt.Fprintf(&tails, "\n--- node %d log (last lines):\n%s", n.id, c.LogTail(n.id, 10))
			}
			err = fmt.Errorf("localcluster: cluster not ready: %w%s", err, tails.String())
			c.Close()
			return nil, err
		}
	}
	c.log.Info("cluster ready", "nodes", len(c.nodes), "bootstrap", strings.Join(c.Bootstrap(), ","))
	return c, nil
}

// init lays out node identities, addresses, directories and certificates.
func (c *Cluster) init(ctx context.Context) error {
	o := c.opts
	udp, tcp, err := freePorts(DefaultHost, o.Nodes, o.Metrics)
	if err != nil {
		return err
	}
	var ctrls []string
	for i := range o.Nodes {
		id := int32(i + 1)
		n := &nodeProc{id: id, ctrl: i < o.Controllers}
		n.addr = fmt.Sprintf("%s:%d", DefaultHost, udp[i])
		if o.Addr != nil {
			n.addr = o.Addr(id)
		}
		if o.Metrics {
			n.metricsAddr = fmt.Sprintf("%s:%d", DefaultHost, tcp[i])
			if o.MetricsAddr != nil {
				n.metricsAddr = o.MetricsAddr(id)
			}
		}
		n.dir = filepath.Join(c.dir, fmt.Sprintf("node%d", id))
		n.dataDir = filepath.Join(n.dir, "data")
		n.logPath = filepath.Join(n.dir, "node.log")
		if err := os.MkdirAll(n.dataDir, 0o755); err != nil {
			return fmt.Errorf("localcluster: %w", err)
		}
		if n.ctrl {
			ctrls = append(ctrls, fmt.Sprintf("%d@%s", id, n.addr))
		}
		c.nodes = append(c.nodes, n)
	}
	c.controllers = strings.Join(ctrls, ",")
	if !o.Insecure {
		c.certDir = filepath.Join(c.dir, "certs")
		if err := c.makeCerts(ctx, c.certDir); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) env() []string { return append(os.Environ(), c.opts.Env...) }

// argv is the command line that starts node n.
func (c *Cluster) argv(n *nodeProc) []string {
	a := []string{c.opts.Binary, "node", "start",
		"--id", strconv.Itoa(int(n.id)),
		"--addr", n.addr,
		"--data-dir", n.dataDir,
		"--controllers", c.controllers,
	}
	if c.certDir != "" {
		a = append(a, "--tls-dir", c.certDir, "--cert-name", certName(n.id))
	}
	if n.metricsAddr != "" {
		a = append(a, "--metrics-addr", n.metricsAddr)
	}
	a = append(a, c.opts.ExtraArgs...)
	if c.opts.NodeArgs != nil {
		a = append(a, c.opts.NodeArgs(n.id)...)
	}
	if c.opts.Command != nil {
		a = c.opts.Command(n.id, a)
	}
	return a
}

// startNode starts one incarnation of n and a goroutine that reaps it.
func (c *Cluster) startNode(ctx context.Context, n *nodeProc) error {
	if c.isClosed() {
		return errSpawnerClosed
	}
	if c.opts.BeforeStart != nil {
		if err := c.opts.BeforeStart(ctx, n.id); err != nil {
			return fmt.Errorf("localcluster: node %d: before start: %w", n.id, err)
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.mu.pid != 0 {
		return ErrRunning
	}
	argv := c.argv(n)
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("localcluster: node %d: %w", n.id, err)
	}
	defer logf.Close() // the child holds its own descriptor
	fmt.Fprintf(logf, "### localcluster %s: start #%d: %s\n", time.Now().Format(time.RFC3339Nano), n.mu.starts+1, strings.Join(argv, " "))
	n.mu.logFrom = 0
	if fi, err := logf.Stat(); err == nil {
		n.mu.logFrom = fi.Size()
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = c.env()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr()
	if err := c.sp.start(cmd); err != nil {
		return fmt.Errorf("localcluster: node %d: start: %w", n.id, err)
	}
	exited := make(chan struct{})
	n.mu.cmd, n.mu.pid, n.mu.exited = cmd, cmd.Process.Pid, exited
	n.mu.paused, n.mu.signalled = false, false
	n.mu.starts++
	c.log.Info("node started", "node", n.id, "pid", n.mu.pid, "addr", n.addr)
	go c.reap(n, cmd, exited)
	return nil
}

// reap waits for an incarnation to exit and records how it ended.
func (c *Cluster) reap(n *nodeProc, cmd *exec.Cmd, exited chan struct{}) {
	err := cmd.Wait()
	n.mu.Lock()
	pid := n.mu.pid
	signalled := n.mu.signalled
	n.mu.pid, n.mu.cmd, n.mu.paused = 0, nil, false
	n.mu.lastExit = err
	logFrom := n.mu.logFrom
	n.mu.Unlock()
	logTo := logFrom
	if fi, serr := os.Stat(n.logPath); serr == nil {
		logTo = fi.Size()
	}
	close(exited)
	if signalled || c.isClosed() {
		c.log.Info("node exited", "node", n.id, "pid", pid, "status", exitString(err))
		return
	}
	c.log.Warn("node exited unexpectedly", "node", n.id, "pid", pid, "status", exitString(err), "log", n.logPath)
	c.mu.Lock()
	c.mu.crashes = append(c.mu.crashes, Crash{ID: n.id, PID: pid, Err: err, At: time.Now(), LogPath: n.logPath,
		LogFrom: logFrom, LogTo: logTo})
	c.mu.Unlock()
}

func exitString(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

func (c *Cluster) node(id int32) (*nodeProc, error) {
	if id < 1 || int(id) > len(c.nodes) {
		return nil, fmt.Errorf("%w: %d", ErrUnknownNode, id)
	}
	return c.nodes[id-1], nil
}

// signal sends sig to the node's process group. terminating marks the
// incarnation as ended by the Cluster (not a crash). It returns the channel
// closed when the incarnation is reaped.
func (c *Cluster) signal(id int32, sig syscall.Signal, terminating bool) (<-chan struct{}, error) {
	n, err := c.node(id)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.mu.pid == 0 {
		return nil, fmt.Errorf("%w: %d", ErrNotRunning, id)
	}
	if terminating {
		n.mu.signalled = true
	}
	if err := syscall.Kill(-n.mu.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return nil, fmt.Errorf("localcluster: node %d: %v: %w", id, sig, err)
	}
	switch sig {
	case syscall.SIGSTOP:
		n.mu.paused = true
	case syscall.SIGCONT:
		n.mu.paused = false
	case syscall.SIGTERM:
		if n.mu.paused { // a stopped process cannot act on SIGTERM
			syscall.Kill(-n.mu.pid, syscall.SIGCONT)
			n.mu.paused = false
		}
	}
	return n.mu.exited, nil
}

// Kill sends SIGKILL to the node and waits until it has exited.
func (c *Cluster) Kill(id int32) error {
	exited, err := c.signal(id, syscall.SIGKILL, true)
	if err != nil {
		return err
	}
	select {
	case <-exited:
		c.log.Info("node killed", "node", id)
		return nil
	case <-time.After(c.opts.StopTimeout):
		return fmt.Errorf("localcluster: node %d did not exit %v after SIGKILL", id, c.opts.StopTimeout)
	}
}

// Stop sends SIGTERM (a controlled shutdown) and waits for the exit until ctx
// ends or Options.StopTimeout passes, then sends SIGKILL.
func (c *Cluster) Stop(ctx context.Context, id int32) error {
	exited, err := c.signal(id, syscall.SIGTERM, true)
	if err != nil {
		return err
	}
	t := time.NewTimer(c.opts.StopTimeout)
	defer t.Stop()
	select {
	case <-exited:
		c.log.Info("node stopped", "node", id)
		return nil
	case <-ctx.Done():
	case <-t.C:
	}
	c.log.Warn("node did not stop in time; killing", "node", id)
	return c.Kill(id)
}

// Pause sends SIGSTOP to the node.
func (c *Cluster) Pause(id int32) error {
	_, err := c.signal(id, syscall.SIGSTOP, false)
	if err == nil {
		c.log.Info("node paused", "node", id)
	}
	return err
}

// Resume sends SIGCONT to a paused node.
func (c *Cluster) Resume(id int32) error {
	_, err := c.signal(id, syscall.SIGCONT, false)
	if err == nil {
		c.log.Info("node resumed", "node", id)
	}
	return err
}

// StartNode starts a node that is not running, on its old address and data.
func (c *Cluster) StartNode(ctx context.Context, id int32) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	return c.startNode(ctx, n)
}

// Restart stops the node if it runs (SIGTERM, see Stop), then starts it again.
func (c *Cluster) Restart(ctx context.Context, id int32) error {
	if c.Node(id).Running {
		if err := c.Stop(ctx, id); err != nil && !errors.Is(err, ErrNotRunning) {
			return err
		}
	}
	return c.StartNode(ctx, id)
}

// Node describes node id (the zero NodeInfo for an unknown id).
func (c *Cluster) Node(id int32) NodeInfo {
	n, err := c.node(id)
	if err != nil {
		return NodeInfo{}
	}
	return n.info()
}

// Nodes describes every node, by id.
func (c *Cluster) Nodes() []NodeInfo {
	out := make([]NodeInfo, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.info()
	}
	return out
}

// IDs returns the node ids, 1..Nodes.
func (c *Cluster) IDs() []int32 {
	out := make([]int32, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.id
	}
	return out
}

// Bootstrap returns every node's address, for client.Config.Bootstrap or --bootstrap.
func (c *Cluster) Bootstrap() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.addr
	}
	return out
}

// Controllers returns the --controllers value the nodes run with.
func (c *Cluster) Controllers() string { return c.controllers }

// Dir is the cluster's directory.
func (c *Cluster) Dir() string { return c.dir }

// ClientTLS is the TLS configuration for a client of this cluster (the zero
// value, dev mode, with Options.Insecure).
func (c *Cluster) ClientTLS() quic.TLSConfig {
	if c.certDir == "" {
		return quic.TLSConfig{}
	}
	return quic.TLSConfig{Dir: c.certDir, Name: ClientCertName}
}

// ClientArgs are the flags a paymentlog client command needs to reach this
// cluster: --bootstrap and, unless Insecure, --tls-dir and --cert-name.
func (c *Cluster) ClientArgs() []string {
	a := []string{"--bootstrap", strings.Join(c.Bootstrap(), ",")}
	if c.certDir != "" {
		a = append(a, "--tls-dir", c.certDir, "--cert-name", ClientCertName)
	}
	return a
}

// LogTail returns the last n lines of node id's log (empty if unreadable).
func (c *Cluster) LogTail(id int32, n int) string {
	nd, err := c.node(id)
	if err != nil {
		return ""
	}
	b, err := os.ReadFile(nd.logPath)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Crashes returns the nodes that exited without being signalled by the Cluster.
func (c *Cluster) Crashes() []Crash {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Crash(nil), c.mu.crashes...)
}

func (c *Cluster) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.closed
}

// Close kills every node (SIGKILL), waits for them, shuts the metadata
// helpers' endpoint down and removes the directory unless Options.Keep. It is idempotent and
// returns the first error met.
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.mu.closed = true
		ep := c.mu.ep
		c.mu.ep = nil
		c.mu.Unlock()
		if ep != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			ep.Shutdown(ctx)
			cancel()
		}
		var errs []error
		for _, n := range c.nodes {
			if err := c.Kill(n.id); err != nil && !errors.Is(err, ErrNotRunning) {
				errs = append(errs, err)
			}
		}
		c.sp.close()
		if c.opts.Keep {
			c.log.Info("cluster closed; directory kept", "dir", c.dir)
		} else if err := os.RemoveAll(c.dir); err != nil {
			errs = append(errs, fmt.Errorf("localcluster: %w", err))
		}
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}
