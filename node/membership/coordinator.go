// Package membership is the consumer group coordinator of the active
// controller (wire/group_members.go has the protocol): which consumers are
// members of which group, and which partitions each may consume. A pure
// state machine: the caller passes the time and the topics, and holds it
// under its lock.
//
// The rule it keeps: a partition is in at most one member's assignment,
// and is put in one only when no other member reports owning it. So a
// partition moves between members in two heartbeats: the one that answers
// its owner without it (the owner releases it), and the first after the
// owner reported the release, which gives it to the next. A member whose
// session timed out is forgotten with what it owned; a coordinator that
// has just started (a controller that took over) knows nothing of what
// members own, so for one session timeout it gives a member only
// partitions it reports owning itself, in the groups that existed before
// it started (those with committed offsets: the caller says which). A
// group that has never committed starts at once.
//
// A member that keeps a partition it was told to release for longer than
// its rebalance timeout (an application that stopped polling) is removed
// with what it owned, so the partition goes on to its next owner; for a
// session timeout after, its heartbeats and commits are answered
// FencedMemberEpoch, telling it to release everything without committing.
//
// A static member (one that joined with an instance id) that leaves with
// StaticLeaveEpoch stays in the group, departed, for a session timeout:
// it keeps its target and assignment, so no other member gets its
// partitions, and the next join with its instance id takes its place
// (a new member id, the old one fenced).
package membership

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"time"

	"paymentlog/wire"
)

// Defaults of Config.
const (
	DefaultSessionTimeout    = 10 * time.Second
	DefaultHeartbeatInterval = time.Second
	// DefaultRebalanceTimeout is a member's rebalance timeout when its
	// join names none (Kafka's max.poll.interval.ms).
	DefaultRebalanceTimeout = 5 * time.Minute
)

// Config tunes a Coordinator.
type Config struct {
	// SessionTimeout is how long a member stays one without a heartbeat.
	SessionTimeout time.Duration
	// HeartbeatInterval is how often members heartbeat.
	HeartbeatInterval time.Duration
	// Prefix starts every member id (the controller's id and term, so ids
	// of two controllers' tenures differ).
	Prefix string
	// TopicNames lists the cluster's topics, sorted, for members that
	// subscribe with a topic pattern; nil refuses patterns.
	TopicNames func() []string
}

// Coordinator holds the groups' members.
type Coordinator struct {
	cfg    Config
	since  time.Time // when it started: the settling window runs one session from it
	nextID uint64
	groups map[string]*group
	// fenced holds, for a session timeout, the member ids fenced (removed
	// for keeping partitions past their rebalance timeout, or replaced by
	// a join with their instance id): group -> member id -> when and why.
	fenced map[string]map[string]fencing
}

// fencing is when and why a member id was fenced.
type fencing struct {
	at  time.Time
	why string
}

// Why member ids are fenced (the FencedMemberEpoch message).
const (
	fencedRebalance = "it kept partitions it was told to release for longer than its rebalance timeout; " +
		"release every partition without committing and join again"
	fencedReplaced = "a member with its instance id joined in its place"
)

type group struct {
	members map[string]*member
	// target is the last target assignment, partition -> member id.
	target map[TopicPartition]string
	// stale says target must be computed again (a member joined, left
	// or changed its subscription); sig is the subscribed topics'
	// partition counts target was computed for.
	stale bool
	sig   string
}

type member struct {
	id, clientID string
	epoch        int32
	topics       []string
	owned        map[TopicPartition]bool // as last reported
	assigned     []TopicPartition        // as last answered, sorted
	last         time.Time
	// rebalance is the member's rebalance timeout; releasing is when it
	// was first answered without a partition it reports owning (zero when
	// it owns nothing it must release).
	rebalance time.Duration
	releasing time.Time
	// instance is a static member's instance id; departed says it left
	// with StaticLeaveEpoch and waits, until its session times out, for
	// a join with its instance id.
	instance string
	departed bool
	// pattern, for a member that subscribed with a topic pattern (as
	// given: patternSrc): its topics are the names matching it, again at
	// each heartbeat.
	pattern    *regexp.Regexp
	patternSrc string
}

// New returns a coordinator with no groups, started at now.
func New(cfg Config, now time.Time) *Coordinator {
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = DefaultSessionTimeout
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = DefaultHeartbeatInterval
	}
	return &Coordinator{cfg: cfg, since: now, groups: map[string]*group{}, fenced: map[string]map[string]fencing{}}
}

// Heartbeat answers one member's heartbeat (join, keep, leave). existed
// says the group has committed offsets (it may have had members under a
// previous coordinator).
func (c *Coordinator) Heartbeat(now time.Time, req *wire.GroupHeartbeatRequest, topics Partitions, existed bool) wire.GroupHeartbeatResponse {
	refuse := func(e *wire.Error) wire.GroupHeartbeatResponse {
		return wire.GroupHeartbeatResponse{Err: e.Code, Message: e.Message, ControllerID: -1}
	}
	if e := wire.CheckGroupHeartbeat(req); e != nil {
		return refuse(e)
	}
	var pattern *regexp.Regexp
	if req.TopicPattern != "" {
		if c.cfg.TopicNames == nil {
			return refuse(&wire.Error{Code: wire.InvalidRequest, Message: "topic patterns are not served here"})
		}
		pattern, _ = wire.TopicPatternRegexp(req.TopicPattern) // checked above
	}
	g := c.groups[req.Group]
	var m *member
	if g != nil {
		m = g.members[req.MemberID]
	}
	if req.MemberEpoch == wire.LeaveEpoch || req.MemberEpoch == wire.StaticLeaveEpoch {
		switch {
		case m == nil:
		case req.MemberEpoch == wire.StaticLeaveEpoch && m.instance != "":
			// Its assignment waits a session timeout for its instance.
			m.departed, m.last, m.owned, m.releasing = true, now, map[TopicPartition]bool{}, time.Time{}
		default:
			c.remove(req.Group, m.id)
		}
		return wire.GroupHeartbeatResponse{MemberID: req.MemberID, MemberEpoch: req.MemberEpoch, ControllerID: -1}
	}
	if m != nil && m.departed && req.MemberEpoch != wire.JoinEpoch {
		return refuse(&wire.Error{Code: wire.UnknownMemberID, Message: fmt.Sprintf(
			"member %q of group %q left (static): join again", req.MemberID, req.Group)})
	}
	if req.MemberEpoch == wire.JoinEpoch && g != nil {
		holder := m
		if req.InstanceID != "" {
			holder = g.byInstance(req.InstanceID)
		}
		switch {
		case holder == nil || !holder.departed && holder.id == req.MemberID:
		case !holder.departed:
			return refuse(&wire.Error{Code: wire.UnreleasedInstanceID, Message: fmt.Sprintf(
				"instance %q of group %q is held by member %q, which has not left: another process with this instance id runs, "+
					"or one died and its session (%v) has not timed out", req.InstanceID, req.Group, holder.id, c.cfg.SessionTimeout)})
		default:
			m = c.takeOver(req.Group, g, holder, now)
		}
	}
	if m == nil && req.MemberEpoch != wire.JoinEpoch {
		if e := c.checkFenced(req.Group, req.MemberID); e != nil {
			return refuse(e)
		}
	}
	if m == nil {
		if req.MemberEpoch != wire.JoinEpoch {
			return refuse(&wire.Error{Code: wire.UnknownMemberID, Message: fmt.Sprintf(
				"member %q of group %q is unknown (its session timed out, or the controller changed): join again", req.MemberID, req.Group)})
		}
		if g == nil {
			g = &group{members: map[string]*member{}}
			c.groups[req.Group] = g
		}
		if len(g.members) >= wire.MaxGroupMembers {
			return refuse(&wire.Error{Code: wire.InvalidRequest, Message: fmt.Sprintf("group %q has %d members already", req.Group, len(g.members))})
		}
		id := req.MemberID // rejoining after a controller change keeps its id
		if id == "" {
			c.nextID++
			id = c.cfg.Prefix + strconv.FormatUint(c.nextID, 10)
		}
		m = &member{id: id, epoch: 1, instance: req.InstanceID} // answers are never JoinEpoch
		g.members[id] = m
		g.stale = true
		delete(c.fenced[req.Group], id) // joined again
	}
	if req.MemberEpoch == wire.JoinEpoch {
		m.rebalance = DefaultRebalanceTimeout
		if req.RebalanceTimeoutMs > 0 {
			m.rebalance = time.Duration(req.RebalanceTimeoutMs) * time.Millisecond
		}
	}
	m.last = now
	m.clientID = req.ClientID
	subs := req.Topics
	switch {
	case pattern != nil:
		m.pattern, m.patternSrc = pattern, req.TopicPattern
	case subs != nil:
		m.pattern, m.patternSrc = nil, ""
	}
	if m.pattern != nil {
		subs = matching(m.pattern, c.cfg.TopicNames())
	}
	if subs != nil && !slices.Equal(subs, m.topics) {
		m.topics = slices.Clone(subs)
		g.stale = true
	}
	m.owned = map[TopicPartition]bool{}
	for _, o := range req.Owned {
		for _, p := range o.Partitions {
			m.owned[TopicPartition{o.Topic, p}] = true
		}
	}
	c.retarget(g, topics)
	settling := existed && now.Sub(c.since) < c.cfg.SessionTimeout
	assigned := c.assignment(g, m, settling)
	if !slices.Equal(assigned, m.assigned) {
		m.assigned = assigned
		m.epoch++
	}
	switch {
	case !m.mustRelease():
		m.releasing = time.Time{}
	case m.releasing.IsZero():
		m.releasing = now // the rebalance timeout runs from this answer
	}
	interval := c.cfg.HeartbeatInterval
	if !settling && c.waiting(g, m) {
		// Partitions are on their way (another member is releasing them):
		// ask again soon rather than a whole interval later.
		interval = min(interval, QuickHeartbeat)
	}
	return wire.GroupHeartbeatResponse{ControllerID: -1, MemberID: m.id, MemberEpoch: m.epoch,
		HeartbeatIntervalMs: int32(interval.Milliseconds()),
		SessionTimeoutMs:    int32(c.cfg.SessionTimeout.Milliseconds()),
		Assigned:            grouped(m.assigned)}
}

// QuickHeartbeat is the heartbeat interval answered to a member waiting for
// partitions of its target that another member still owns.
const QuickHeartbeat = 100 * time.Millisecond

// waiting reports whether m's target holds partitions it has not been
// given yet, or it owns partitions it must release.
func (c *Coordinator) waiting(g *group, m *member) bool {
	n := 0
	for _, id := range g.target {
		if id == m.id {
			n++
		}
	}
	return n != len(m.assigned) || len(m.owned) > len(m.assigned)
}

// retarget computes g's target assignment again when its members or
// subscriptions changed, or a subscribed topic's partition count did.
func (c *Coordinator) retarget(g *group, topics Partitions) {
	members := g.sorted()
	sig := signature(members, topics)
	if !g.stale && sig == g.sig {
		return
	}
	g.target = target(members, topics, g.target)
	g.stale, g.sig = false, sig
}

// assignment is what m may consume now: its target partitions that no
// other member reports owning, and while the group settles only those it
// reports owning itself.
func (c *Coordinator) assignment(g *group, m *member, settling bool) []TopicPartition {
	var out []TopicPartition
	for tp, id := range g.target {
		if id != m.id || (settling && !m.owned[tp]) || g.claimedByOther(tp, m.id, true) {
			continue
		}
		out = append(out, tp)
	}
	slices.SortFunc(out, TopicPartition.compare)
	return out
}

// claimedByOther reports whether a member other than id has tp assigned,
// or (withOwned) reports owning it.
func (g *group) claimedByOther(tp TopicPartition, id string, withOwned bool) bool {
	for oid, o := range g.members {
		if oid != id && (withOwned && o.owned[tp] || slices.Contains(o.assigned, tp)) {
			return true
		}
	}
	return false
}

func (g *group) sorted() []*member {
	out := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b *member) int { return cmp.Compare(a.id, b.id) })
	return out
}

// signature names the partition counts of the topics members subscribe to.
func signature(members []*member, topics Partitions) string {
	var names []string
	for _, m := range members {
		names = append(names, m.topics...)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	b := make([]byte, 0, 16*len(names))
	for _, t := range names {
		n, _ := topics(t)
		b = append(b, t...)
		b = append(b, '=')
		b = strconv.AppendInt(b, int64(n), 10)
		b = append(b, ',')
	}
	return string(b)
}

// grouped turns sorted partitions into per-topic sets.
func grouped(tps []TopicPartition) []wire.GroupPartitions {
	out := []wire.GroupPartitions{}
	for _, tp := range tps {
		if len(out) == 0 || out[len(out)-1].Topic != tp.Topic {
			out = append(out, wire.GroupPartitions{Topic: tp.Topic})
		}
		last := &out[len(out)-1]
		last.Partitions = append(last.Partitions, tp.Partition)
	}
	return out
}

// matching lists the names re matches, never nil.
func matching(re *regexp.Regexp, names []string) []string {
	out := []string{}
	for _, n := range names {
		if re.MatchString(n) {
			out = append(out, n)
		}
	}
	return out
}

// byInstance is the member holding instance id, or nil.
func (g *group) byInstance(instance string) *member {
	for _, m := range g.members {
		if m.instance == instance {
			return m
		}
	}
	return nil
}

// takeOver puts a new member in the place of the departed static member
// old (a join with its instance id): a new member id, old's subscription,
// target and assignment; old's id is fenced.
func (c *Coordinator) takeOver(group string, g *group, old *member, now time.Time) *member {
	c.nextID++
	m := &member{id: c.cfg.Prefix + strconv.FormatUint(c.nextID, 10), epoch: old.epoch, instance: old.instance,
		topics: old.topics, pattern: old.pattern, patternSrc: old.patternSrc, assigned: old.assigned}
	delete(g.members, old.id)
	g.members[m.id] = m
	for tp, id := range g.target {
		if id == old.id {
			g.target[tp] = m.id
		}
	}
	c.fence(group, old.id, now, fencedReplaced)
	return m
}

// fence remembers id as fenced, for a session timeout from now.
func (c *Coordinator) fence(group, id string, now time.Time, why string) {
	if c.fenced[group] == nil {
		c.fenced[group] = map[string]fencing{}
	}
	c.fenced[group][id] = fencing{at: now, why: why}
}

// mustRelease reports whether m reports owning a partition it is not
// assigned.
func (m *member) mustRelease() bool {
	for tp := range m.owned {
		if !slices.Contains(m.assigned, tp) {
			return true
		}
	}
	return false
}

// checkFenced is FencedMemberEpoch for a member fenced less than a session
// timeout ago, else nil.
func (c *Coordinator) checkFenced(group, id string) *wire.Error {
	f, ok := c.fenced[group][id]
	if !ok {
		return nil
	}
	return &wire.Error{Code: wire.FencedMemberEpoch, Message: fmt.Sprintf("member %q of group %q was removed: %s", id, group, f.why)}
}

// remove forgets a member (and the group once it has none).
func (c *Coordinator) remove(group, id string) {
	g := c.groups[group]
	delete(g.members, id)
	g.stale = true
	if len(g.members) == 0 {
		delete(c.groups, group)
	}
}

// Expire forgets the members whose last heartbeat is more than a session
// timeout before now (expired), and fences those that have kept a
// partition they were told to release for more than their rebalance
// timeout (fenced: removed, their heartbeats and commits answered
// FencedMemberEpoch for a session timeout).
func (c *Coordinator) Expire(now time.Time) (expired, fenced int) {
	for name, g := range c.groups {
		for id, m := range g.members {
			switch {
			case now.Sub(m.last) > c.cfg.SessionTimeout:
				c.remove(name, id)
				expired++
			case !m.releasing.IsZero() && now.Sub(m.releasing) > m.rebalance:
				c.remove(name, id)
				c.fence(name, id, now, fencedRebalance)
				fenced++
			}
		}
	}
	for name, ids := range c.fenced {
		for id, f := range ids {
			if now.Sub(f.at) > c.cfg.SessionTimeout {
				delete(ids, id)
			}
		}
		if len(ids) == 0 {
			delete(c.fenced, name)
		}
	}
	return expired, fenced
}
