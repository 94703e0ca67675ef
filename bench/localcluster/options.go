package localcluster

import (
	"context"
	"log/slog"
	"time"
)

// Defaults for Options.
const (
	DefaultNodes        = 3
	DefaultWaitTimeout  = 30 * time.Second
	DefaultStopTimeout  = 15 * time.Second
	DefaultPollInterval = 20 * time.Millisecond
	DefaultHost         = "127.0.0.1"
	ClientCertName      = "client"
)

// Options configures Start. Zero fields take the defaults named in their comments.
type Options struct {
	// Binary is the paymentlog executable to run (os.Executable() for
	// `paymentlog bench`, a `go build` output for tests). Required.
	Binary string
	// Nodes is the number of nodes, with ids 1..Nodes; default 3.
	Nodes int
	// Controllers is how many of them (ids 1..Controllers) are controller
	// eligible; default min(Nodes, 3).
	Controllers int
	// BaseDir is where the cluster's temporary directory is created; default os.TempDir().
	BaseDir string
	// Keep leaves the directory (data, logs, certificates) in place after Close.
	Keep bool
	// Insecure runs without certificates (the nodes' dev mode). Default: mutual TLS
	// with certificates made by `paymentlog cert`.
	Insecure bool
	// Metrics gives every node a free TCP port for --metrics-addr (/metrics, /debug/pprof).
	Metrics bool
	// ExtraArgs are appended to every node's `node start` arguments
	// (e.g. "--fsync", "never", "--session-timeout", "500ms").
	ExtraArgs []string
	// NodeArgs, if set, returns extra arguments for one node, appended after ExtraArgs.
	NodeArgs func(id int32) []string
	// Env is added to the environment of every child process (KEY=VALUE).
	Env []string
	// Logger receives one line per lifecycle event; default: discard.
	Logger *slog.Logger

	// Addr, if set, returns a node's listen address instead of a free
	// 127.0.0.1 UDP port; the caller guarantees it is free.
	Addr func(id int32) string
	// MetricsAddr, if set, returns a node's --metrics-addr (with Metrics)
	// instead of a free 127.0.0.1 TCP port; the caller guarantees it is
	// free, and reachable from this process.
	MetricsAddr func(id int32) string
	// Command, if set, rewrites the argv that starts a node (argv[0] is
	// Binary), e.g. to prefix "ip netns exec nsN".
	Command func(id int32, argv []string) []string
	// BeforeStart, if set, runs before every start of a node.
	BeforeStart func(ctx context.Context, id int32) error

	// NoWait makes Start return as soon as the processes run, without waiting
	// for a controller and every node's registration.
	NoWait bool
	// WaitTimeout bounds WaitFor (and Start's readiness wait) when the
	// context has no deadline; default 30s.
	WaitTimeout time.Duration
	// StopTimeout bounds Stop's wait for a SIGTERMed node before SIGKILL; default 15s.
	StopTimeout time.Duration
	// PollInterval is WaitFor's polling period; default 20ms.
	PollInterval time.Duration
}

func (o Options) withDefaults() Options {
	if o.Nodes <= 0 {
		o.Nodes = DefaultNodes
	}
	if o.Controllers <= 0 {
		o.Controllers = min(o.Nodes, 3)
	}
	if o.Controllers > o.Nodes {
		o.Controllers = o.Nodes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.WaitTimeout <= 0 {
		o.WaitTimeout = DefaultWaitTimeout
	}
	if o.StopTimeout <= 0 {
		o.StopTimeout = DefaultStopTimeout
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	return o
}
