package node

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"paymentlog/segment"
)

// A node whose disk stalls steps aside as one whose disk is full does.
//
// A disk can hang instead of failing: an EBS or SAN hiccup, a dying SSD, a
// frozen file system, where an fsync or msync does not return for seconds.
// The process runs on and its heartbeats reach the controller, so nothing
// fences it, and every partition it leads times out its acks=all writes
// (each waits for the leader's flush) for as long as the disk hangs. So,
// like CockroachDB's storage.max_sync_duration: every file of the partition
// logs and of the metadata log goes through one segment.DiskOps, and while
// the oldest operation in flight has been running longer than
// Config.DiskStallTimeout the node holds back its broker heartbeats
// (heartbeatLoop), exactly as for a full disk: the controller fences it
// after a session timeout and moves its leaderships to in-sync replicas,
// and it fences itself after two if it cannot reach the controller
// (checkSelfFence). Once the operation returns it heartbeats again (after a
// hold-down if the disk stalls again and again, diskstall_holddown.go); the
// controller unfences it once it has applied the metadata log, and it
// rejoins the ISRs by fetching.
//
// Not covered: a thread the kernel blocks outside the tracked calls (a
// store or a read fault into a mapping of a frozen file system), nor a
// process whose every thread is blocked (then it stops heartbeating, which
// the controller already handles).

// DefaultDiskStallTimeout: see Config.DiskStallTimeout.
const DefaultDiskStallTimeout = 2 * time.Second

// diskStall is the stall detector's state.
type diskStall struct {
	ops  *segment.DiskOps // nil: detection off
	onOS bool             // the logs are on the OS's file systems (trackDiskOps)
	now  func() time.Time // the hold-down's and the device watch's clock; nil: time.Now
	// writes reads the completed writes of the data directory's block
	// device (diskstall_progress.go), set at the first look (when onOS)
	// unless a test set it; nil: unknown.
	writes     func() (uint64, error)
	writesOnce sync.Once
	// SIGCONT (diskstall_stop.go): whether it is read, when it last came
	// (UnixNano by clock; 0: never), and a nudge for a look waiting for it.
	watchingCont atomic.Bool
	contNs       atomic.Int64
	contCh       chan struct{}
	mu           struct {
		sync.Mutex
		stalled  bool
		op       segment.DiskOp // the operation that started the stall
		stalls   uint64         // stalls detected since start
		hold     stallHoldDown
		progress deviceProgress
		slowLog  time.Time // when a slow operation was last logged
		lastLook time.Time // the previous look (diskStalled), by clock
		stops    stopSpans // the last spans this process was stopped in (diskstall_stop.go)
	}
}

// isStalled reports whether the last look found a stall.
func (s *diskStall) isStalled() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.stalled
}

// clock reads the hold-down's clock.
func (s *diskStall) clock() time.Time {
	if s.now == nil {
		return time.Now()
	}
	return s.now()
}

// trackDiskOps wraps cfg's partition-log and metadata-log file systems
// with one tracker and returns it; nil (nothing wrapped) when stall
// detection is off. onOS: both are the OS's (under the data directory),
// so the data directory's block device is theirs (diskstall_progress.go).
func trackDiskOps(cfg *Config) (ops *segment.DiskOps, onOS bool) {
	if cfg.DiskStallTimeout <= 0 {
		return nil, false
	}
	onOS = isOSFS(cfg.LogFS) && isOSFS(cfg.MetadataFS)
	ops = segment.NewDiskOps(nil)
	cfg.LogFS = ops.FS(cfg.LogFS)
	cfg.MetadataFS = ops.FS(cfg.MetadataFS)
	return ops, onOS
}

// isOSFS reports whether fs is the OS's file system (nil means it).
func isOSFS(fs segment.FS) bool {
	switch fs.(type) {
	case nil, segment.OSFS, *segment.OSFS:
		return true
	}
	return false
}

// diskLook is what one look of the detector found.
type diskLook struct {
	op      segment.DiskOp // the oldest disk operation in flight
	age     time.Duration  // its age
	stalled bool           // it is a stall
	slow    bool           // older than the timeout, but the device is writing
	why     string         // why it is a stall (for the log)
}

// oldestDiskOp looks at the oldest disk operation in flight: it is a
// stall when older than the timeout while the device completed no write
// for a timeout, or older than slowDiskStallFactor timeouts
// (diskstall_progress.go), or older than the timeout during a stall (a
// stall ends when its operation returns, not when the device writes
// something).
func (n *Node) oldestDiskOp() diskLook {
	if n.stall.ops == nil {
		return diskLook{}
	}
	idle, known := n.deviceIdle() // at every look, so that it knows when the device last wrote
	op, age, ok := n.stall.ops.Oldest()
	if ok {
		age -= n.stall.stoppedWithin(op.Start, op.Start.Add(age)) // not the disk's time
	}
	l := diskLook{op: op, age: age}
	timeout := n.cfg.DiskStallTimeout
	if !ok || age <= timeout {
		return l
	}
	switch {
	case n.stall.isStalled():
		l.why = "the stall goes on until the operation returns"
	case !known:
		l.why = "the device's progress is unknown"
	case idle > timeout:
		l.why = fmt.Sprintf("the device completed no write for %s", idle.Round(time.Millisecond))
	case age > slowDiskStallFactor*timeout:
		l.why = fmt.Sprintf("in flight longer than %d timeouts", slowDiskStallFactor)
	default:
		l.slow = true
		return l
	}
	l.stalled = true
	return l
}

// diskStallReason says why the disk counts as stalled, or why the node is
// still aside after a stall ("" for neither), e.g. "disk stalled:
// fdatasync of /data/payments-0/....log in flight for 3.2s".
func (n *Node) diskStallReason() string {
	if l := n.oldestDiskOp(); l.stalled {
		return fmt.Sprintf("disk stalled: %s in flight for %.1fs", l.op, l.age.Seconds())
	}
	if n.stall.ops == nil {
		return ""
	}
	now := n.stall.clock()
	n.stall.mu.Lock()
	defer n.stall.mu.Unlock()
	return n.stall.mu.hold.reason(now)
}

// diskStalled reports whether the disk is stalled now or the node is in a
// hold-down after a stall, logging when a stall starts (Error) and ends
// (Info, or Warn when a hold-down follows), and when a hold-down ends
// (Info). The heartbeat loop calls it before each heartbeat.
func (n *Node) diskStalled() bool {
	s := &n.stall
	s.mu.Lock()
	last := s.mu.lastLook
	s.mu.Unlock()
	start := s.clock()
	since := start // this look ran from here on
	if c, ok := n.explainGap(last, start); ok && c.After(since) {
		since = c // (waiting for the SIGCONT's notice is no stop)
	}
	look := n.oldestDiskOp()
	var late segment.DiskOp // the slowest operation that returned since the last look
	if s.ops != nil {
		late = s.ops.TakeSlowest()
	}
	now := s.clock()
	if _, ok := n.explainGap(since, now); ok { // stopped during this look
		look = n.oldestDiskOp()
	}
	op, age, stalled, slow := look.op, look.age, look.stalled, look.slow
	s.mu.Lock()
	logSlow := slow && now.Sub(s.mu.slowLog) >= time.Minute
	if logSlow {
		s.mu.slowLog = now
	}
	was, first := s.mu.stalled, s.mu.op
	s.mu.stalled = stalled
	h := &s.mu.hold
	// A stall no look saw: an operation over the timeout that returned
	// while this process was not looking for longer than the timeout.
	// When a write blocks on a frozen file system its thread keeps its P
	// (appends are raw pwrite calls) and the GC's stop-the-world then
	// waits for it: the whole process stops, heartbeats included, and the
	// controller fences it as a dead node. It still counts as a stall, so
	// that a disk that does it again and again gets the hold-down.
	lateTook := late.Took - s.mu.stops.overlap(late.Start, late.Start.Add(late.Took)) // less a stop (diskstall_stop.go)
	missed := !was && !stalled && !s.mu.lastLook.IsZero() &&
		lateTook > n.cfg.DiskStallTimeout && now.Sub(s.mu.lastLook) > n.cfg.DiskStallTimeout
	unseen := now.Sub(s.mu.lastLook)
	s.mu.lastLook = now
	switch {
	case stalled && !was:
		s.mu.op = op
		s.mu.stalls++
		h.started(op.Start) // when the disk began to hang
	case !stalled && was:
		h.stopped(now)
	case missed:
		first = late
		s.mu.stalls++
		h.started(late.Start)
		h.stopped(now)
	}
	holding := !stalled && h.left(now) > 0
	wasHolding := h.holding
	wait, gap, until := h.backoff, h.gap, h.until
	s.mu.Unlock()
	needed := ""
	if holding {
		needed = n.neededDuringHoldDown() // (reads the image: not under s.mu)
	}
	s.mu.Lock()
	if needed != "" {
		h.cut()
		holding = false
	}
	h.holding = holding
	s.mu.Unlock()
	if logSlow {
		n.log.Warn("disk slow: an operation has been in flight longer than --disk-stall-timeout, but the device is writing: not a stall (logged at most once a minute)",
			"op", op.Kind, "path", op.Path, "in_flight", age.Round(time.Millisecond), "disk_stall_timeout", n.cfg.DiskStallTimeout)
	}
	if missed {
		n.log.Error("disk stalled while this whole process was blocked: an operation took longer than --disk-stall-timeout and no look saw it in flight; counted as a stall",
			"op", late.Kind, "path", late.Path, "took", late.Took.Round(time.Millisecond), "no_look_for", unseen.Round(time.Millisecond),
			"disk_stall_timeout", n.cfg.DiskStallTimeout)
	}
	if needed != "" { // (a stall that ends at this look is logged as over too)
		n.log.Warn("disk stall hold-down cut short: a partition this node replicates is below min.insync.replicas, so it heartbeats again",
			"partition", needed, "hold_down", wait, "until", until.UTC().Format(time.TimeOnly))
	}
	switch {
	case stalled && !was:
		n.log.Error("disk stalled: holding back broker heartbeats so that the controller fences this node and moves its leaderships; it heartbeats again once the operation returns",
			"op", op.Kind, "path", op.Path, "in_flight", age.Round(time.Millisecond), "disk_stall_timeout", n.cfg.DiskStallTimeout,
			"why", look.why, "since_last_look", unseen.Round(time.Millisecond))
		n.handOffControllerOnStall()
	case !stalled && (was || missed) && holding:
		n.log.Warn("disk stall over, but the disk stalled again soon after the previous stall: holding back broker heartbeats for a hold-down",
			"op", first.Kind, "path", first.Path, "stalled_for", now.Sub(first.Start).Round(time.Millisecond),
			"after_previous", gap.Round(time.Millisecond), "hold_down", wait, "until", until.UTC().Format(time.TimeOnly))
	case !stalled && (was || missed):
		n.log.Info("disk stall over: heartbeating; the controller unfences this node once it has applied the metadata log",
			"op", first.Kind, "path", first.Path, "stalled_for", now.Sub(first.Start).Round(time.Millisecond))
	case !stalled && wasHolding && !holding && needed == "":
		n.log.Info("disk stall hold-down over: heartbeating; the controller unfences this node once it has applied the metadata log",
			"hold_down", wait)
	}
	return stalled || holding
}

// diskStallStats is what /metrics shows of the detector.
type diskStallStats struct {
	on      bool
	stalled bool
	stalls  uint64
	oldest  time.Duration // the oldest operation in flight's age (0: none)
	longest time.Duration // the longest operation completed since start

	holdDown  time.Duration // the hold-down left (0: none)
	holdDowns uint64        // hold-downs imposed since start
}

func (n *Node) diskStallStats() diskStallStats {
	if n.stall.ops == nil {
		return diskStallStats{}
	}
	look := n.oldestDiskOp()
	longest, _ := n.stall.ops.Longest()
	s := &n.stall
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	return diskStallStats{on: true, stalled: look.stalled, stalls: s.mu.stalls, oldest: look.age, longest: longest.Took,
		holdDown: s.mu.hold.left(now), holdDowns: s.mu.hold.count}
}
