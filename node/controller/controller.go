// Package controller is the active-controller runtime (DESIGN §3): on the
// node whose raft member leads the metadata group it tracks broker sessions,
// answers registrations, heartbeats, ISR changes, topic creation/deletion and
// producer-id requests, and turns each into records through the pure
// decisions of package metadata, proposed through raft.
//
// One goroutine (Run) decides and proposes, in order: every decision is made
// against the image that includes every earlier decision, because requests
// drained together are decided one after another against a speculative image
// and proposed as one entry, and the next batch starts only after that entry
// has been applied locally. Heartbeats that change nothing are answered
// without entering the loop.
//
// On becoming raft leader the controller first commits a ControllerMarker
// (so its image holds everything committed before), then grants every
// registered broker one full session timeout from that moment before it
// fences anyone. Sessions live in memory on the active controller only, on
// the injected clock; a check tick fences expired brokers, and brokers whose
// heartbeats arrive but who have confirmed none of the answers for 1.5
// session timeouts (they can send but not receive: see sessions.unanswered)
// or whose raft has followed no leader or another for as long (they do not
// receive the metadata log: sessions.strayed),
// moves leadership back to preferred replicas, and adds broker-only nodes as
// raft learners.
//
// Lifecycle: New, then Run(ctx) until ctx ends (it returns nil then). Request
// methods may be called at any time from any goroutine; while this node is
// not the active controller (or Run is not running) they answer
// NotController with the raft leader as the hint.
package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"paymentlog/internal/portprobe"
	"paymentlog/metrics"
	"paymentlog/node/membership"
	"paymentlog/node/metadata"
)

// Defaults.
const (
	DefaultHeartbeatInterval = 100 * time.Millisecond
	DefaultSessionTimeout    = time.Second
	DefaultProposeTimeout    = 5 * time.Second
	// maxBatch bounds the requests decided together into one entry.
	maxBatch = 256
)

// Config configures a Controller. Zero fields take the defaults.
type Config struct {
	NodeID int32
	Raft   Raft
	Store  *metadata.Store

	HeartbeatInterval time.Duration // brokers' heartbeat period; default 100ms
	SessionTimeout    time.Duration // silence that fences a broker; default 1s
	// Grace is how long a newly active controller waits for a broker's first
	// heartbeat before fencing it; default SessionTimeout (one full session,
	// as KRaft does). A broker co-located with a dead controller is fenced
	// after election time + Grace.
	Grace time.Duration
	// PrevControllerGrace is the grace the previous active controller's own
	// broker gets (default 3 heartbeat intervals, at most Grace): see activate.
	PrevControllerGrace time.Duration
	// CheckInterval is the period of session expiry checks, preferred-leader
	// elections and learner reconciliation; default HeartbeatInterval/2.
	// With the real clock a timer also checks expiry at the earliest
	// session deadline, so detection takes SessionTimeout + one commit;
	// with Ticks or another Now, up to CheckInterval more.
	CheckInterval time.Duration
	// PreferredLeaderDelay is how long a partition's preferred replica
	// must have been back in its ISR, and live, before its leadership
	// moves back to it; its broker must also have reported applying the
	// metadata that showed it so (preferred.go). Default
	// DefaultPreferredLeaderDelay; negative: no delay (the applied
	// metadata is still waited for).
	PreferredLeaderDelay time.Duration
	// Probe, when set, checks the port of a broker silent for ProbeAfter
	// (probe.go), given when its last heartbeat came: Closed fences it at
	// once, its process being gone, instead of when its session runs out.
	// Nil: sessions alone.
	Probe portprobe.Func
	// ProbeAfter is the silence after which a broker's port is probed;
	// default 1.5 heartbeat intervals.
	ProbeAfter      time.Duration
	ProposeTimeout  time.Duration // bound on one raft proposal; default 5s
	ProducerIDBlock int64         // producer ids per block; default metadata.DefaultProducerIDBlock
	// GroupExpiryInterval is how often the active controller deletes the
	// groups that have not committed for offsets.retention.ms (groups.go);
	// default DefaultGroupExpiryInterval.
	GroupExpiryInterval time.Duration
	// GroupSessionTimeout and GroupHeartbeatInterval are the consumer
	// group members' (members.go); defaults membership.DefaultSessionTimeout
	// and membership.DefaultHeartbeatInterval.
	GroupSessionTimeout, GroupHeartbeatInterval time.Duration

	Now   func() time.Time // default time.Now
	Ticks <-chan time.Time // drives checks (tests); default a ticker at CheckInterval
	// realClock: Now is time.Now (set by defaults). Only then does a timer
	// at the earliest session deadline check expiry between ticks.
	realClock bool
	Rand      func() uint64 // topic ids and assignment seeds, safe for concurrent use; default math/rand/v2
	// Logger; default slog.Default(). It should name the node (the node's
	// logger carries node=ID); the controller adds nothing.
	Logger *slog.Logger
}

func (c *Config) defaults() {
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = DefaultSessionTimeout
	}
	if c.Grace <= 0 {
		c.Grace = c.SessionTimeout
	}
	if c.PrevControllerGrace <= 0 {
		c.PrevControllerGrace = min(3*c.HeartbeatInterval, c.Grace)
	}
	if c.CheckInterval <= 0 {
		c.CheckInterval = max(c.HeartbeatInterval/2, time.Millisecond)
	}
	if c.ProbeAfter <= 0 {
		c.ProbeAfter = c.HeartbeatInterval + c.HeartbeatInterval/2
	}
	if c.ProposeTimeout <= 0 {
		c.ProposeTimeout = DefaultProposeTimeout
	}
	if c.PreferredLeaderDelay == 0 {
		c.PreferredLeaderDelay = DefaultPreferredLeaderDelay
	}
	if c.ProducerIDBlock <= 0 {
		c.ProducerIDBlock = metadata.DefaultProducerIDBlock
	}
	if c.GroupExpiryInterval <= 0 {
		c.GroupExpiryInterval = DefaultGroupExpiryInterval
	}
	if c.Now == nil {
		c.Now, c.realClock = time.Now, true
	}
	if c.Rand == nil {
		c.Rand = rand.Uint64
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Controller is the active-controller runtime of one controller-eligible node.
type Controller struct {
	cfg  Config
	log  *slog.Logger
	reqs chan *request
	// learnerKick wakes the learner reconciler.
	learnerKick chan struct{}
	// fenceKick wakes the loop to fence a broker whose port a probe found
	// closed (probe.go); probes counts the probes in flight.
	fenceKick chan struct{}
	probes    sync.WaitGroup
	// probesSent and fences count, for the metrics, the probes started and
	// the brokers this controller fenced by cause (FenceCauses).
	probesSent atomic.Uint64
	fences     [numFenceCauses]atomic.Uint64
	closedBy   [numPortFinders]atomic.Uint64 // of the fences[fenceClosedPort]
	// stopped is closed when Run returns.
	stopped chan struct{}

	// lastCheck is when the sessions were last checked (tick, or the expiry
	// timer) in this tenure as active controller
	// (or when it began); loop only.
	lastCheck time.Time
	// commitLatency times proposals to their local apply (stats.go).
	commitLatency metrics.Histogram
	// groupsCheckedAt is when tick last looked for expired groups; loop
	// only.
	groupsCheckedAt time.Time
	// groupCommits counts the offset commits committed (GroupCommits).
	groupCommits atomic.Uint64
	// membersExpired and membersFenced count the group members removed
	// for a session timeout and for a rebalance timeout (MembersRemoved).
	membersExpired, membersFenced atomic.Uint64

	mu struct {
		sync.Mutex
		// activeTerm is the raft term whose ControllerMarker this node
		// committed; 0 while not the active controller.
		activeTerm uint64
		sessions   *sessions
		// preferred holds preferred-leader elections back (preferred.go).
		preferred *preferredWait
		running   bool
		// members are the consumer groups' members while active, nil
		// otherwise (members.go).
		members *membership.Coordinator
		// groupsAtStart are the groups with offsets when this tenure
		// began (members.go).
		groupsAtStart map[string]bool
		// refused is the last port refusal raft reported (PortRefused).
		refused portRefusal
	}
}

// New returns a controller; it acts only while Run runs.
func New(cfg Config) *Controller {
	cfg.defaults()
	c := &Controller{
		cfg:         cfg,
		log:         cfg.Logger, // the caller's logger names the node
		reqs:        make(chan *request, maxBatch),
		learnerKick: make(chan struct{}, 1),
		fenceKick:   make(chan struct{}, 1),
		stopped:     make(chan struct{}),
	}
	c.mu.sessions = newSessions(cfg.SessionTimeout)
	c.mu.preferred = newPreferredWait(max(cfg.PreferredLeaderDelay, 0))
	return c
}

// Run is the decision loop. It returns nil when ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	c.mu.Lock()
	if c.mu.running {
		c.mu.Unlock()
		return errors.New("controller: Run called twice")
	}
	c.mu.running = true
	c.mu.Unlock()
	defer close(c.stopped)
	defer func() {
		c.mu.Lock()
		c.mu.running = false
		c.mu.activeTerm = 0
		c.mu.sessions.clear()
		c.mu.Unlock()
		c.failPending()
	}()

	ticks := c.cfg.Ticks
	if ticks == nil {
		t := time.NewTicker(c.cfg.CheckInterval)
		defer t.Stop()
		ticks = t.C
	}
	// With the real clock and ticker, a timer also fires at the earliest
	// broker session deadline, and when a broker has been silent for
	// ProbeAfter: a dead broker is fenced when its session runs out, and
	// probed when its silence is long enough, not up to a CheckInterval
	// later.
	var expiry *time.Timer
	var expiryC <-chan time.Time
	if c.cfg.Ticks == nil && c.cfg.realClock {
		expiry = time.NewTimer(time.Hour)
		defer expiry.Stop()
		expiryC = expiry.C
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); c.learnerLoop(ctx) }()
	defer wg.Wait()
	defer c.probes.Wait()

	c.checkLeadership(ctx)
	for {
		if expiry != nil {
			expiry.Reset(c.untilExpiry())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-c.cfg.Raft.LeaderChanges():
			if c.checkLeadership(ctx) {
				// A tenure that begins here checks at once, not at the
				// next tick: the replaced controller's broker, its port
				// found closed by this node's raft, is fenced now.
				c.checkSessions(ctx)
				c.probeSilent(ctx)
			}
		case <-ticks:
			if c.checkLeadership(ctx) {
				c.tick(ctx)
			}
		case <-expiryC:
			if c.checkLeadership(ctx) {
				c.checkSessions(ctx)
				c.probeSilent(ctx)
			}
		case <-c.fenceKick:
			if c.checkLeadership(ctx) {
				c.checkSessions(ctx)
			}
		case r := <-c.reqs:
			c.handleBatch(ctx, r)
		}
	}
}

// untilExpiry is how long until just after the earliest session deadline
// of an unfenced broker, or until the next broker to be probed has been
// silent for ProbeAfter, whichever comes first (an hour while inactive or
// with neither). Heartbeats move deadlines on outside the loop, so the
// timer may fire at a deadline that has moved since: that check finds
// nothing and the loop re-arms. A deadline that a check has already seen,
// and a broker already silent for ProbeAfter, are left to the periodic
// checks, so the timer can never fire over and over for one (a fence that
// fails deactivates this controller, and reactivation gives fresh grace,
// but the timer does not rely on that). Loop only.
func (c *Controller) untilExpiry() time.Duration {
	if !c.active() {
		return time.Hour
	}
	img, now := c.cfg.Store.Image(), c.cfg.Now()
	c.mu.Lock()
	at := c.mu.sessions.nextDeadline(img)
	var probe time.Time
	if c.cfg.Probe != nil {
		probe = c.mu.sessions.nextProbe(img, now, c.cfg.ProbeAfter, c.cfg.NodeID)
	}
	c.mu.Unlock()
	until := time.Hour
	if !at.IsZero() && at.After(c.lastCheck) {
		until = max(at.Sub(now)+time.Millisecond, time.Millisecond)
	}
	if !probe.IsZero() {
		until = min(until, max(probe.Sub(now), time.Millisecond))
	}
	return until
}

// failPending answers requests left in the queue when Run ends.
func (c *Controller) failPending() {
	for {
		select {
		case r := <-c.reqs:
			r.finish(nil, c.notController())
		default:
			return
		}
	}
}

// active reports whether this node is the active controller right now.
func (c *Controller) active() bool {
	c.mu.Lock()
	term := c.mu.activeTerm
	c.mu.Unlock()
	if term == 0 {
		return false
	}
	st := c.cfg.Raft.Status()
	return st.IsLeader && st.Term == term
}

// checkLeadership activates or deactivates the controller according to
// raft's view; loop only. It reports whether the controller is active.
func (c *Controller) checkLeadership(ctx context.Context) bool {
	st := c.cfg.Raft.Status()
	c.mu.Lock()
	term := c.mu.activeTerm
	c.mu.Unlock()
	switch {
	case st.IsLeader && term == st.Term:
		return true
	case st.IsLeader:
		return c.activate(ctx, st.Term)
	case term != 0:
		c.deactivate("raft leadership lost")
	}
	return false
}

// activate commits the marker for term and starts the grace period.
func (c *Controller) activate(ctx context.Context, term uint64) bool {
	start := c.cfg.Now()
	data, err := metadata.EncodeEntry(metadata.ControllerMarker{ControllerID: c.cfg.NodeID, Term: term})
	if err != nil {
		panic(fmt.Sprintf("controller: encoding a marker cannot fail: %v", err))
	}
	pctx, cancel := context.WithTimeout(ctx, c.cfg.ProposeTimeout)
	idx, err := c.cfg.Raft.Propose(pctx, data)
	cancel()
	if err != nil {
		c.log.Warn("controller marker not committed", "epoch", term, "err", err)
		return false
	}
	img, err := c.waitApplied(ctx, idx)
	if err != nil {
		return false
	}
	if st := c.cfg.Raft.Status(); !st.IsLeader || st.Term != term {
		return false
	}
	if img.ControllerID() != c.cfg.NodeID || img.ControllerTerm() != term {
		// Our marker was rejected on apply: another controller has a newer term.
		return false
	}
	// The controller we replace is the one our marker replaced in the log.
	// The image before we proposed could still lack the markers of
	// controllers between it and us (a very short turn, committed but not
	// yet applied here) and would name an older one, whose broker would get
	// the short grace while the replaced controller's got a whole session.
	prevController := img.PrevControllerID()
	// The stall check measures from the previous check of this tenure: one
	// from an earlier tenure would take the time spent as a follower for a
	// stall and re-arm every session, undoing the grace set here.
	c.lastCheck = c.cfg.Now()
	c.mu.Lock()
	c.mu.activeTerm = term
	c.mu.sessions.reset(img, c.cfg.Now(), c.cfg.Grace)
	c.mu.preferred.clear() // a new tenure waits afresh
	c.startMembers(term, img)
	if prevController != c.cfg.NodeID {
		// Raft (with PreVote and CheckQuorum) elects a new leader only when
		// the old one stopped answering, or handed leadership over on a
		// controlled shutdown (after which its broker is fenced already).
		// So the previous controller's broker is most likely dead: it gets
		// only a few heartbeats of grace instead of a whole session, which
		// keeps the partitions it led from waiting election + session.
		c.mu.sessions.shorten(prevController, c.cfg.Now().Add(c.cfg.PrevControllerGrace))
		// And it has been silent since before the election: its port is
		// probed at the first check (probe.go), not ProbeAfter from now,
		// unless this node's raft found it refused already.
		c.mu.sessions.backdate(prevController, c.cfg.Now().Add(-c.cfg.ProbeAfter))
		// (Within a second or a session: a new process of that node would
		// have had to register with a controller in between.)
		if r := c.mu.refused; c.cfg.Probe != nil && r.id == prevController && c.cfg.Now().Sub(r.at) < max(c.cfg.SessionTimeout, time.Second) {
			c.mu.sessions.markClosed(prevController, r.at)
		}
		// The same holds when its heartbeats keep arriving: raft also
		// moves leadership away from a controller that can send but not
		// receive (CheckQuorum), and such a broker would otherwise be
		// found deaf only 1.5 sessions after its first heartbeat here,
		// long after the partitions it leads stopped. Given the grace
		// plus the half session a heartbeat waits for its answer
		// (node.heartbeatOnce: both of its heartbeats may be waiting on
		// the controller it was), it must confirm one of our answers.
		c.mu.sessions.expectConfirmation(prevController,
			c.cfg.Now().Add(c.cfg.PrevControllerGrace+c.cfg.SessionTimeout/2))
	}
	c.mu.Unlock()
	for _, b := range img.Brokers() {
		c.cfg.Raft.SetPeerAddr(uint64(b.ID), b.Addr)
	}
	c.kickLearners()
	c.log.Info("active controller", "epoch", term, "offset", idx, "brokers", len(img.Brokers()),
		"took", c.cfg.Now().Sub(start))
	return true
}

func (c *Controller) deactivate(why string) {
	c.mu.Lock()
	term := c.mu.activeTerm
	c.mu.activeTerm = 0
	c.mu.sessions.clear()
	c.mu.members = nil
	c.mu.Unlock()
	if term != 0 {
		c.log.Info("no longer the active controller", "epoch", term, "reason", why)
	}
}

// waitApplied returns the store's image once it includes offset idx.
func (c *Controller) waitApplied(ctx context.Context, idx uint64) (*metadata.Image, error) {
	wctx, cancel := context.WithTimeout(ctx, c.cfg.ProposeTimeout)
	defer cancel()
	return c.cfg.Store.WaitFor(wctx, func(m *metadata.Image) bool { return m.Offset() >= idx })
}

// tick runs the periodic checks; loop only, active controller only.
func (c *Controller) tick(ctx context.Context) {
	reqs := c.sessionChecks()
	c.probeSilent(ctx)
	img, now := c.cfg.Store.Image(), c.cfg.Now()
	c.mu.Lock()
	ready := c.mu.preferred.readySet(img, now, func(id int32, inc int64) (uint64, bool, bool) {
		off, ok := c.mu.sessions.appliedOf(id, inc)
		return off, c.keepsUpLocked(id, inc, now), ok
	})
	c.mu.Unlock()
	if len(ready) > 0 {
		reqs = append(reqs, &request{kind: "preferred-leaders", decide: func(m *metadata.Image) ([]metadata.Record, error) {
			return metadata.DecidePreferredLeadersIf(m, func(p metadata.PartitionState) bool {
				r, ok := ready[partitionRef{p.TopicID, p.Partition}]
				return ok && r == p.Preferred()
			}), nil
		}})
	}
	if r := c.groupExpiry(); r != nil {
		reqs = append(reqs, r)
	}
	c.expireMembers(c.cfg.Now())
	c.decideAndPropose(ctx, reqs)
	if c.learnersMissing(c.cfg.Store.Image()) {
		c.kickLearners()
	}
}

// checkSessions fences the brokers whose sessions ran out (the expiry
// timer's check: tick without preferred leaders and learners).
func (c *Controller) checkSessions(ctx context.Context) {
	if reqs := c.sessionChecks(); len(reqs) > 0 {
		c.decideAndPropose(ctx, reqs)
	}
}

// sessionChecks returns a fence request for every broker whose session ran
// out or that confirms none of the answers (sessions.unanswered), after the
// stall check: a check after this controller itself stood still re-arms
// every session instead.
func (c *Controller) sessionChecks() []*request {
	now := c.cfg.Now()
	img := c.cfg.Store.Image()
	c.mu.Lock()
	if c.cfg.Ticks == nil && !c.lastCheck.IsZero() && now.Sub(c.lastCheck) > c.cfg.CheckInterval+c.cfg.SessionTimeout/2 {
		// (Only with the real ticker: scripted tests move their clock in
		// jumps on purpose.) This controller itself stood still (SIGSTOP,
		// a VM pause, CPU starvation) for a large part of a session: the brokers' silence
		// is ours, not theirs, and their heartbeats may be queued behind
		// this check. Give everyone a fresh session, as a new controller
		// does, instead of fencing the whole cluster.
		c.log.Warn("controller stalled; re-arming broker sessions", "stall", now.Sub(c.lastCheck))
		c.mu.sessions.extendAll(now.Add(c.cfg.SessionTimeout))
	}
	c.lastCheck = now
	expired := c.mu.sessions.expired(img, now)
	overdue := make([]time.Duration, len(expired))
	silence := make([]time.Duration, len(expired))
	closed := make([]bool, len(expired)) // its port was found closed (probe.go)
	closedBy := make([]portFinder, len(expired))
	for i, b := range expired {
		ss := c.mu.sessions.m[b.ID]
		overdue[i], silence[i], closed[i], closedBy[i] = now.Sub(ss.deadline), now.Sub(ss.heard), !ss.closedAt.IsZero(), ss.closedBy
	}
	deaf := c.mu.sessions.unanswered(img, now)
	var strayed []metadata.BrokerState
	for _, b := range c.mu.sessions.strayed(img, now) {
		if b.ID != c.cfg.NodeID && !slices.ContainsFunc(deaf, func(d metadata.BrokerState) bool { return d.ID == b.ID }) {
			strayed = append(strayed, b)
		}
	}
	var keeping map[int32]bool // the brokers keeping up with the metadata log, as of now
	if len(expired)+len(deaf)+len(strayed) > 0 {
		keeping = c.keepingUpLocked(img, now)
	}
	c.mu.Unlock()
	var reqs []*request
	fence := func(b metadata.BrokerState, cause fenceCause, by portFinder) {
		reqs = append(reqs, &request{kind: "fence", decide: func(m *metadata.Image) ([]metadata.Record, error) {
			// Its partitions go to replicas that will hear of it, where
			// their ISR has one (metadata.DecideFenceFavoring).
			recs := metadata.DecideFenceFavoring(m, b.ID, b.Incarnation, func(id int32) bool { return keeping[id] })
			if len(recs) > 0 {
				c.fences[cause].Add(1)
				if cause == fenceClosedPort {
					c.closedBy[by].Add(1)
				}
			}
			return recs, nil
		}})
	}
	for i, b := range expired {
		if closed[i] {
			c.log.Warn("broker silent and its port found closed (its process is gone); fencing before its session runs out",
				"broker", b.ID, "incarnation", b.Incarnation, "addr", b.Addr, "silent", silence[i], "found_by", PortFinders[closedBy[i]])
			fence(b, fenceClosedPort, closedBy[i])
			continue
		}
		// overdue: how long after the deadline this check ran (a late
		// timer or a busy controller loop shows here).
		c.log.Warn("broker session expired; fencing", "broker", b.ID, "incarnation", b.Incarnation, "overdue", overdue[i])
		fence(b, fenceSession, 0)
	}
	for _, b := range deaf {
		c.log.Warn("broker's heartbeats arrive but it confirms none of the answers (for 1.5 session timeouts, or since it was the controller this one replaced; it cannot receive); fencing",
			"broker", b.ID, "incarnation", b.Incarnation)
		fence(b, fenceDeaf, 0)
	}
	for _, b := range strayed {
		c.log.Warn("broker's heartbeats arrive but its raft has followed no metadata leader, or another, for 1.5 session timeouts (it does not receive the metadata log); fencing",
			"broker", b.ID, "incarnation", b.Incarnation)
		fence(b, fenceStrayed, 0)
	}
	return reqs
}

// keepsUpLocked reports whether broker id's incarnation keeps up with the
// metadata log at its latest heartbeat (sessions.keepingUp), which came
// within two heartbeat intervals: one more may be late. c.mu held.
func (c *Controller) keepsUpLocked(id int32, incarnation int64, now time.Time) bool {
	return c.mu.sessions.keepingUp(id, incarnation, now, 2*c.cfg.HeartbeatInterval)
}

// keepingUpLocked returns the unfenced brokers of img that keep up with
// the metadata log (keepsUpLocked). c.mu held.
func (c *Controller) keepingUpLocked(img *metadata.Image, now time.Time) map[int32]bool {
	out := map[int32]bool{}
	for _, b := range img.Brokers() {
		if !b.Fenced && c.keepsUpLocked(b.ID, b.Incarnation, now) {
			out[b.ID] = true
		}
	}
	return out
}
