package clienttest

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"paymentlog/wire"
)

// Consumer groups' committed offsets, answered by the controller as the
// real one answers them (wire/group_offsets.go): validated all or nothing,
// and against the group's members (members.go), kept by topic incarnation
// (DeleteTopic removes a topic's offsets from every group), read back
// sorted by topic and partition.

// group is one consumer group's committed offsets.
type group struct {
	created      time.Time // its first commit
	lastCommitMs int64
	offsets      map[groupKey]wire.GroupOffset
}

type groupKey struct {
	topic     string
	partition int32
}

// GroupOffsets returns a group's committed offsets as OffsetFetch answers
// them (nil for a group that does not exist).
func (c *Cluster) GroupOffsets(name string) []wire.GroupOffset {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.groupOffsetsLocked(name, nil)
}

func (c *Cluster) groupOffsetsLocked(name string, topics []string) []wire.GroupOffset {
	g, ok := c.mu.groups[name]
	if !ok {
		return nil
	}
	var out []wire.GroupOffset
	for k, o := range g.offsets {
		if len(topics) == 0 || slices.Contains(topics, k.topic) {
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b wire.GroupOffset) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}

func (c *Cluster) offsetCommit(addr string, r *wire.OffsetCommitRequest) *wire.OffsetCommitResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	refuse := func(code wire.ErrorCode, format string, args ...any) *wire.OffsetCommitResponse {
		return &wire.OffsetCommitResponse{Err: code, Message: fmt.Sprintf(format, args...), ControllerID: -1}
	}
	if c.brokerAt(addr) != c.mu.controller {
		return &wire.OffsetCommitResponse{Err: wire.NotController, ControllerID: c.mu.controller}
	}
	topic := func(name string) (string, int32, bool) {
		t, ok := c.mu.topics[name]
		if !ok {
			return "", 0, false
		}
		return t.id, int32(len(t.parts)), true
	}
	if e := wire.CheckOffsetCommit(r, topic); e != nil {
		return &wire.OffsetCommitResponse{Err: e.Code, Message: e.Message, ControllerID: -1}
	}
	if e := c.checkMemberCommitLocked(r); e != nil {
		return &wire.OffsetCommitResponse{Err: e.Code, Message: e.Message, ControllerID: -1}
	}
	g, ok := c.mu.groups[r.Group]
	if !ok {
		if len(c.mu.groups) >= wire.MaxGroups {
			return refuse(wire.InvalidRequest, "the cluster has %d groups", len(c.mu.groups))
		}
		g = &group{created: time.Now(), offsets: map[groupKey]wire.GroupOffset{}}
		c.mu.groups[r.Group] = g
	}
	now := time.Now().UnixMilli()
	g.lastCommitMs = now
	for _, o := range r.Offsets {
		o.TopicID, o.CommitTimeMs = c.mu.topics[o.Topic].id, now
		g.offsets[groupKey{o.Topic, o.Partition}] = o
	}
	c.bumpLocked()
	return &wire.OffsetCommitResponse{MetadataOffset: c.mu.moff, ControllerID: -1}
}

func (c *Cluster) offsetFetch(addr string, r *wire.OffsetFetchRequest) *wire.OffsetFetchResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.brokerAt(addr) != c.mu.controller {
		return &wire.OffsetFetchResponse{Err: wire.NotController, ControllerID: c.mu.controller}
	}
	if why := wire.CheckGroupName(r.Group); why != "" {
		return &wire.OffsetFetchResponse{Err: wire.InvalidGroupID, Message: why, ControllerID: -1}
	}
	resp := &wire.OffsetFetchResponse{ControllerID: -1, Offsets: c.groupOffsetsLocked(r.Group, r.Topics)}
	if r.Members {
		c.mu.members.Expire(time.Now())
		resp.Members = c.mu.members.Describe(r.Group)
	}
	return resp
}

func (c *Cluster) listGroups(addr string) *wire.ListGroupsResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.brokerAt(addr) != c.mu.controller {
		return &wire.ListGroupsResponse{Err: wire.NotController, ControllerID: c.mu.controller}
	}
	resp := &wire.ListGroupsResponse{ControllerID: -1, Groups: []wire.GroupSummary{}}
	c.mu.members.Expire(time.Now())
	for name, g := range c.mu.groups {
		resp.Groups = append(resp.Groups, wire.GroupSummary{Group: name, Partitions: int32(len(g.offsets)), LastCommitMs: g.lastCommitMs,
			Members: int32(c.mu.members.Count(name))})
	}
	for _, name := range c.mu.members.Groups() {
		if _, ok := c.mu.groups[name]; !ok { // members that have not committed yet
			resp.Groups = append(resp.Groups, wire.GroupSummary{Group: name, Members: int32(c.mu.members.Count(name))})
		}
	}
	slices.SortFunc(resp.Groups, func(a, b wire.GroupSummary) int { return cmp.Compare(a.Group, b.Group) })
	return resp
}

func (c *Cluster) deleteGroup(addr string, r *wire.DeleteGroupRequest) *wire.DeleteGroupResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.brokerAt(addr) != c.mu.controller {
		return &wire.DeleteGroupResponse{Err: wire.NotController, ControllerID: c.mu.controller}
	}
	if why := wire.CheckGroupName(r.Group); why != "" {
		return &wire.DeleteGroupResponse{Err: wire.InvalidGroupID, Message: why, ControllerID: -1}
	}
	c.mu.members.Expire(time.Now())
	if e := c.mu.members.CheckEmpty(r.Group); e != nil {
		return &wire.DeleteGroupResponse{Err: e.Code, Message: e.Message, ControllerID: -1}
	}
	if _, ok := c.mu.groups[r.Group]; !ok {
		return &wire.DeleteGroupResponse{Err: wire.GroupIDNotFound, Message: fmt.Sprintf("group %s does not exist", r.Group), ControllerID: -1}
	}
	delete(c.mu.groups, r.Group)
	c.bumpLocked()
	return &wire.DeleteGroupResponse{MetadataOffset: c.mu.moff, ControllerID: -1}
}

// deleteTopicOffsetsLocked removes a deleted topic's offsets from every
// group (the groups stay).
func (c *Cluster) deleteTopicOffsetsLocked(topic string) {
	for _, g := range c.mu.groups {
		for k := range g.offsets {
			if k.topic == topic {
				delete(g.offsets, k)
			}
		}
	}
}
