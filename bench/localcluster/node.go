package localcluster

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// ErrNotRunning is returned when signalling a node that is not running.
var ErrNotRunning = errors.New("localcluster: node not running")

// ErrRunning is returned when starting a node that already runs.
var ErrRunning = errors.New("localcluster: node already running")

// ErrUnknownNode is returned for a node id outside 1..Nodes.
var ErrUnknownNode = errors.New("localcluster: unknown node")

// NodeInfo describes one node at the moment Node was called.
type NodeInfo struct {
	ID                 int32
	Addr               string // UDP host:port (--addr)
	MetricsAddr        string // TCP host:port of /metrics and /debug/pprof; empty unless Options.Metrics
	DataDir            string // --data-dir
	LogPath            string // stdout and stderr of every incarnation
	ControllerEligible bool
	PID                int  // 0 when not running
	Running            bool // started and not yet exited (paused counts as running)
	Paused             bool
	Starts             int   // how many times the node was started
	LastExit           error // how the previous incarnation ended (nil: exit status 0 or never exited)
}

// Crash records a node that exited without the Cluster having signalled it.
type Crash struct {
	ID      int32
	PID     int
	Err     error // from exec.Cmd.Wait; nil means exit status 0
	At      time.Time
	LogPath string
	// LogFrom and LogTo delimit, in bytes of LogPath, what the incarnation
	// wrote (Output): from after the "### localcluster" start line to
	// where the log ended when the process was reaped.
	LogFrom, LogTo int64
}

// Output reads what the crashed incarnation wrote to its log, at most the
// last limit bytes of it.
func (c Crash) Output(limit int64) ([]byte, error) {
	from := max(c.LogFrom, c.LogTo-limit)
	if c.LogTo <= from {
		return nil, nil
	}
	f, err := os.Open(c.LogPath)
	if err != nil {
		return nil, fmt.Errorf("localcluster: node %d: %w", c.ID, err)
	}
	defer f.Close()
	b := make([]byte, c.LogTo-from)
	n, err := f.ReadAt(b, from)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("localcluster: node %d: %w", c.ID, err)
	}
	return b[:n], nil
}

// nodeProc is one node's fixed identity and its current process.
type nodeProc struct {
	id          int32
	addr        string
	metricsAddr string
	dir         string
	dataDir     string
	logPath     string
	ctrl        bool

	mu struct {
		sync.Mutex
		cmd       *exec.Cmd
		pid       int           // 0 when not running
		exited    chan struct{} // closed when the current incarnation is reaped
		paused    bool
		signalled bool // the Cluster sent SIGKILL or SIGTERM to the current incarnation
		lastExit  error
		starts    int
		logFrom   int64 // LogPath's size when the current incarnation started (Crash.LogFrom)
	}
}

func (n *nodeProc) info() NodeInfo {
	n.mu.Lock()
	defer n.mu.Unlock()
	return NodeInfo{
		ID:                 n.id,
		Addr:               n.addr,
		MetricsAddr:        n.metricsAddr,
		DataDir:            n.dataDir,
		LogPath:            n.logPath,
		ControllerEligible: n.ctrl,
		PID:                n.mu.pid,
		Running:            n.mu.pid != 0,
		Paused:             n.mu.paused,
		Starts:             n.mu.starts,
		LastExit:           n.mu.lastExit,
	}
}
