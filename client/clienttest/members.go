package clienttest

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"paymentlog/node/membership"
	"paymentlog/wire"
)

// Consumer groups' members (wire/group_members.go), kept by a real
// membership.Coordinator as the active controller keeps them: heartbeats
// join, keep and leave; commits and deletions are checked against the
// members; OffsetFetch (with Members) and ListGroups show them. Every group
// request first forgets the members whose sessions timed out (the real
// controller does so at its ticks).

// newCoordinatorLocked replaces the members' coordinator with an empty one
// started now, as a controller that takes over starts one.
func (c *Cluster) newCoordinatorLocked() {
	c.mu.coordinators++
	cfg := c.mu.memberCfg
	cfg.Prefix = fmt.Sprintf("%d.%d.", c.mu.controller, c.mu.coordinators)
	cfg.TopicNames = c.topicNamesLocked // called by Heartbeat, with c.mu held
	c.mu.members = membership.New(cfg, time.Now())
	c.mu.membersSince = time.Now()
}

// SetGroupTimeouts sets the members' session timeout and heartbeat interval
// (zero: membership's defaults, 10 s and 1 s) and forgets every member, as
// ForgetMembers does.
func (c *Cluster) SetGroupTimeouts(session, heartbeat time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.memberCfg = membership.Config{SessionTimeout: session, HeartbeatInterval: heartbeat}
	c.newCoordinatorLocked()
}

// ForgetMembers forgets every member of every group, as a controller that
// takes over does: their next heartbeats are answered UnknownMemberID, and
// for one session timeout a group that had committed offsets before gives
// each member only the partitions it reports owning.
func (c *Cluster) ForgetMembers() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.newCoordinatorLocked()
}

// GroupMembers returns a group's members as a describe answers them.
func (c *Cluster) GroupMembers(group string) []wire.GroupMember {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.members.Expire(time.Now())
	return c.mu.members.Describe(group)
}

func (c *Cluster) groupHeartbeat(addr string, r *wire.GroupHeartbeatRequest) *wire.GroupHeartbeatResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.brokerAt(addr) != c.mu.controller {
		return &wire.GroupHeartbeatResponse{Err: wire.NotController, ControllerID: c.mu.controller}
	}
	now := time.Now()
	c.mu.members.Expire(now)
	topics := func(name string) (int32, bool) {
		t, ok := c.mu.topics[name]
		if !ok {
			return 0, false
		}
		return int32(len(t.parts)), true
	}
	// The group had members under the previous coordinator only if it
	// had committed before this one started.
	g, ok := c.mu.groups[r.Group]
	existed := ok && g.created.Before(c.mu.membersSince)
	resp := c.mu.members.Heartbeat(now, r, topics, existed)
	return &resp
}

// checkMemberCommitLocked is membership.CheckOffsetCommit for r.
func (c *Cluster) checkMemberCommitLocked(r *wire.OffsetCommitRequest) *wire.Error {
	c.mu.members.Expire(time.Now())
	return c.mu.members.CheckOffsetCommit(r)
}

// topicNamesLocked lists the topics, sorted (membership.Config.TopicNames).
func (c *Cluster) topicNamesLocked() []string {
	return slices.Sorted(maps.Keys(c.mu.topics))
}
