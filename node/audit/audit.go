package audit

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// DeniedPerSecond bounds the denied lines written per second (with a burst
// of as many); the rest are counted and reported by the next one written.
const DeniedPerSecond = 100

// Event kinds (the "event" key).
const (
	EventAdmin  = "admin"
	EventDenied = "denied"
	EventAccess = "access" // access.go
	EventNode   = "node"   // node_events.go
)

// ResourceTopic is the resource of access lines.
const ResourceTopic = "topic"

// ResultOK is the result of a request that succeeded; ResultMalformed of one
// that could not be decoded.
const (
	ResultOK        = "ok"
	ResultMalformed = "malformed"
	ResultError     = "error"   // the node failed to answer, or stopped on an error
	ResultRefused   = "refused" // a TLS reload the node refused
	ResultRevoked   = "revoked" // a handshake refused: the client's certificate is revoked (refused_connect.go has the others)
)

// OpConnect is the op of a denied line for a refused handshake.
const OpConnect = "connect"

// Who is the client a line is about.
type Who struct {
	Principal     string
	Authenticated bool
	Addr          string
}

// line is one audit line, in the format of the package doc.
type line struct {
	Time          string          `json:"time"`
	Node          int32           `json:"node"`
	Event         string          `json:"event"`
	Principal     string          `json:"principal"`
	Authenticated bool            `json:"authenticated"`
	Addr          string          `json:"addr"`
	Op            string          `json:"op"`
	Resource      string          `json:"resource,omitempty"`
	ResourceName  *string         `json:"resource_name,omitempty"`
	Request       json.RawMessage `json:"request,omitempty"`
	Result        string          `json:"result"`
	Message       string          `json:"message,omitempty"`
	Response      json.RawMessage `json:"response,omitempty"`
	Details       json.RawMessage `json:"details,omitempty"` // node lines: node_events.go
	Suppressed    uint64          `json:"suppressed,omitempty"`
	Prev          *string         `json:"prev,omitempty"` // file lines only: chain.go
}

// Log is a node's audit trail. Its methods may be called concurrently.
type Log struct {
	node   int32
	logger *slog.Logger
	now    func() time.Time

	mu   sync.Mutex
	file *os.File // nil: lines go to logger
	prev string   // the hash of the last line written to file (chain.go)
	// path is file's name; size its length as written; maxBytes and
	// maxFiles the rotation's limits (rotate.go; 0: none).
	path     string
	size     int64
	maxBytes int64
	maxFiles int
	// fs is what a rotation renames, creates and syncs with (rotate.go);
	// renamedOpen the name a failed rotation left the open file under
	// ("" when it is path).
	fs          rotateFS
	renamedOpen string
	lim         limiter
	// previous says how the run before this one ended (node_events.go);
	// set by Open, read-only after.
	previous string

	access  accessSeen
	refused refusedSeen // refused_connect.go
	fwd     *forwarder  // nil: lines are not forwarded (forward.go)
	// counted is the last forwarder started, kept after Close for Counts.
	counted atomic.Pointer[forwarder]

	written, suppressed, writeErrors, rotations, rotationErrors atomic.Uint64
}

// Open returns node's audit trail, appended to path (created 0600 if
// missing), or written to logger when path is "".
func Open(path string, node int32, logger *slog.Logger) (*Log, error) {
	if logger == nil {
		logger = slog.Default()
	}
	l := &Log{node: node, logger: logger, now: time.Now, fs: osRotateFS, lim: limiter{rate: DeniedPerSecond},
		access: accessSeen{interval: DefaultAccessInterval}}
	if path == "" {
		return l, nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	last, err := lastLine(f)
	if err == nil && len(last) == 0 {
		// A new file, or one a rotation started before a crash
		// (rotate.go): the chain goes on from the last rotated file.
		last, err = lastLineBefore(path)
	}
	var fi os.FileInfo
	if err == nil {
		fi, err = f.Stat()
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("audit log %s: %w", path, err)
	}
	if len(last) > 0 {
		l.prev = lineHash(last)
	}
	l.previous = previousRun(last, node)
	l.file, l.path, l.size = f, path, fi.Size()
	return l, nil
}

// Close closes the file, if any.
func (l *Log) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fwd != nil {
		l.fwd.close()
		l.fwd = nil
	}
	if l.file == nil {
		return nil
	}
	err := l.file.Close()
	l.file = nil
	return err
}

// ForwardTo also sends every line from now on to the syslog collector at
// addr (tcp://HOST:PORT, tls://HOST:PORT with t, or udp://HOST:PORT;
// forward.go).
func (l *Log) ForwardTo(addr string, t ForwardTLS) error {
	f, err := newForwarder(addr, t, forwardQueue, l.logger)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fwd != nil {
		l.fwd.close()
	}
	l.fwd = f
	l.counted.Store(f)
	return nil
}

// Admin writes an admin line: who sent op, the request and response (any
// value encoding/json takes; nil leaves the key out), the result and its
// message.
func (l *Log) Admin(who Who, op string, request, response any, result, message string) {
	if l == nil {
		return
	}
	ln := l.newLine(EventAdmin, who, op, result, message)
	ln.Request = rawJSON(request)
	ln.Response = rawJSON(response)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.write(&ln)
}

// Denied writes a denied line: who may not perform op on the resource
// (resourceType "topic", "group" or "cluster", and its name), with the
// refusal's code name and message; over DeniedPerSecond it only counts it.
func (l *Log) Denied(who Who, op, resourceType, name, result, message string) {
	if l == nil {
		return
	}
	ln := l.newLine(EventDenied, who, op, result, message)
	ln.Resource, ln.ResourceName = resourceType, &name
	l.mu.Lock()
	defer l.mu.Unlock()
	skipped, ok := l.lim.take(l.now())
	if !ok {
		l.suppressed.Add(1)
		return
	}
	ln.Suppressed = skipped
	l.write(&ln)
}

func (l *Log) newLine(event string, who Who, op, result, message string) line {
	return line{Time: l.now().UTC().Format(time.RFC3339Nano), Node: l.node, Event: event, Principal: who.Principal,
		Authenticated: who.Authenticated, Addr: who.Addr, Op: op, Result: result, Message: message}
}

// write writes ln as one line and syncs it; l.mu is held.
func (l *Log) write(ln *line) {
	if l.file != nil {
		prev := l.prev
		ln.Prev = &prev
	}
	b, err := json.Marshal(ln)
	if err != nil { // only a request or response that cannot be JSON
		ln.Request, ln.Response = nil, nil
		ln.Message = fmt.Sprintf("%s (request not recorded: %v)", ln.Message, err)
		b, _ = json.Marshal(ln)
	}
	l.written.Add(1)
	if l.fwd != nil {
		l.fwd.enqueue(b, ln.Event, l.now())
	}
	if l.file == nil {
		l.logger.Info("audit", "line", json.RawMessage(b))
		return
	}
	hash := lineHash(b)
	b = append(b, '\n')
	if l.maxBytes > 0 && l.size > 0 && l.size+int64(len(b)) > l.maxBytes {
		if err := l.rotateLocked(); err != nil { // the line is still written: the next one tries again
			l.rotationErrors.Add(1)
			l.logger.Error("audit log rotation failed: the line goes to the file open", "err", err)
		}
	}
	n, err := l.file.Write(b)
	l.size += int64(n)
	if err == nil {
		l.prev = hash // written: the next line follows it, even if the sync fails
		err = l.file.Sync()
	}
	if err != nil {
		l.writeErrors.Add(1)
		l.logger.Error("audit log write failed", "err", err, "line", json.RawMessage(b[:len(b)-1]))
	}
}

// rawJSON is v as JSON; nil for nil or what encoding/json refuses.
func rawJSON(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(fmt.Sprintf("%q", "not recorded: "+err.Error()))
	}
	return b
}

// Counts are the log's counters, for /metrics.
type Counts struct {
	// Written are the lines written (or attempted), Suppressed the denied
	// lines left out over the rate limit, WriteErrors the failed writes.
	Written, Suppressed, WriteErrors uint64
	// Rotations are the files rotated (rotate.go), RotationErrors the
	// rotations that failed (each line then goes to the file open).
	Rotations, RotationErrors uint64
	// Forwarded are the lines sent to the syslog collector, ForwardDropped
	// those dropped (queue full, collector gone at close, too long for UDP).
	Forwarded, ForwardDropped uint64
	// ForwardTLSRefused are the failed TLS connections to the collector, by
	// reason (forward_tls.go's ForwardRefusals, in that order).
	ForwardTLSRefused [len(ForwardRefusals)]uint64
}

// Counts returns the counters (zero for a nil Log).
func (l *Log) Counts() Counts {
	if l == nil {
		return Counts{}
	}
	c := Counts{Written: l.written.Load(), Suppressed: l.suppressed.Load(), WriteErrors: l.writeErrors.Load(),
		Rotations: l.rotations.Load(), RotationErrors: l.rotationErrors.Load()}
	if f := l.counted.Load(); f != nil {
		c.Forwarded, c.ForwardDropped = f.sent.Load(), f.dropped.Load()
		for i := range f.refused {
			c.ForwardTLSRefused[i] = f.refused[i].Load()
		}
	}
	return c
}
