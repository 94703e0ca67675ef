package controller

import (
	"context"
	"fmt"
	"time"

	"paymentlog/node/membership"
	"paymentlog/node/metadata"
	"paymentlog/wire"
)

// The consumer groups' members live on the active controller only, in
// memory (node/membership; wire/group_members.go says why and what a
// controller that takes over does): activate starts an empty coordinator,
// deactivate drops it.

// startMembers gives a newly active controller of term an empty coordinator,
// and notes the groups img has (those that may have had members under an
// earlier controller: membership's settling); with c.mu held.
func (c *Controller) startMembers(term uint64, img *metadata.Image) {
	c.mu.members = membership.New(membership.Config{SessionTimeout: c.cfg.GroupSessionTimeout,
		HeartbeatInterval: c.cfg.GroupHeartbeatInterval,
		Prefix:            fmt.Sprintf("%d.%d.", c.cfg.NodeID, term),
		TopicNames:        func() []string { return c.cfg.Store.Image().TopicNames() }}, c.cfg.Now())
	c.mu.groupsAtStart = map[string]bool{}
	for _, g := range img.Groups() {
		c.mu.groupsAtStart[g.Name] = true
	}
}

// withMembers runs f with the coordinator under c.mu; false (and f not
// run) while this controller is not active.
func (c *Controller) withMembers(f func(m *membership.Coordinator)) bool {
	if !c.active() {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.members == nil {
		return false
	}
	f(c.mu.members)
	return true
}

// GroupHeartbeat answers a member's heartbeat (membership.Heartbeat).
func (c *Controller) GroupHeartbeat(_ context.Context, req wire.GroupHeartbeatRequest) wire.GroupHeartbeatResponse {
	img := c.cfg.Store.Image()
	var r wire.GroupHeartbeatResponse
	if !c.withMembers(func(m *membership.Coordinator) {
		r = m.Heartbeat(c.cfg.Now(), &req, topicPartitions(img), c.mu.groupsAtStart[req.Group])
	}) {
		code, msg, hint := c.errorCode(c.notController())
		return wire.GroupHeartbeatResponse{Err: code, Message: msg, ControllerID: hint}
	}
	r.ControllerID = c.cfg.NodeID
	return r
}

// topicPartitions is membership.Partitions over img.
func topicPartitions(img *metadata.Image) membership.Partitions {
	return func(name string) (int32, bool) {
		t, ok := img.Topic(name)
		return int32(len(t.Partitions)), ok
	}
}

// checkMemberCommit refuses a commit that the group's membership does not
// allow (membership.CheckCommit); nil when it does, or when this
// controller is not active (the commit's submission then answers so).
func (c *Controller) checkMemberCommit(req wire.OffsetCommitRequest) error {
	var e *wire.Error
	c.withMembers(func(m *membership.Coordinator) { e = m.CheckOffsetCommit(&req) })
	if e != nil {
		return e
	}
	return nil
}

// checkGroupEmpty refuses a deletion of a group with members.
func (c *Controller) checkGroupEmpty(group string) error {
	var e *wire.Error
	c.withMembers(func(m *membership.Coordinator) { e = m.CheckEmpty(group) })
	if e != nil {
		return e
	}
	return nil
}

// expireMembers forgets the members whose sessions ran out, and fences
// those that kept partitions past their rebalance timeout; tick only.
func (c *Controller) expireMembers(now time.Time) {
	var expired, fenced int
	c.withMembers(func(m *membership.Coordinator) { expired, fenced = m.Expire(now) })
	if expired > 0 {
		c.membersExpired.Add(uint64(expired))
		c.log.Info("group members' sessions timed out", "members", expired)
	}
	if fenced > 0 {
		c.membersFenced.Add(uint64(fenced))
		c.log.Warn("group members fenced: they kept partitions they were told to release past their rebalance timeout",
			"members", fenced)
	}
}
