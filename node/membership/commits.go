package membership

import (
	"fmt"
	"slices"

	"paymentlog/wire"
)

// CheckCommit says whether memberID may commit offsets of group for tps:
// a group without members takes commits only from no member; one with
// members only from a member, and only for partitions it has assigned or
// reports owning and no other member has assigned. nil when it may.
func (c *Coordinator) CheckCommit(group, memberID string, tps []TopicPartition) *wire.Error {
	g := c.groups[group]
	if memberID != "" && (g == nil || g.members[memberID] == nil) {
		if e := c.checkFenced(group, memberID); e != nil {
			return e
		}
	}
	switch {
	case g == nil && memberID == "":
		return nil
	case g == nil || g.members[memberID] == nil && memberID != "":
		return &wire.Error{Code: wire.UnknownMemberID, Message: fmt.Sprintf(
			"member %q of group %q is unknown (its session timed out, or the controller changed): join again", memberID, group)}
	case memberID != "" && g.members[memberID].departed:
		return &wire.Error{Code: wire.UnknownMemberID, Message: fmt.Sprintf("member %q of group %q left (static)", memberID, group)}
	case memberID == "":
		return &wire.Error{Code: wire.NonEmptyGroup, Message: fmt.Sprintf(
			"group %q has %d members: only they commit its offsets", group, len(g.members))}
	}
	m := g.members[memberID]
	for _, tp := range tps {
		mine := m.owned[tp] || slices.Contains(m.assigned, tp)
		if !mine || g.claimedByOther(tp, memberID, false) {
			return &wire.Error{Code: wire.InvalidRequest, Message: fmt.Sprintf(
				"%s-%d is not assigned to member %q of group %q", tp.Topic, tp.Partition, memberID, group)}
		}
	}
	return nil
}

// CheckOffsetCommit is CheckCommit for the partitions r commits.
func (c *Coordinator) CheckOffsetCommit(r *wire.OffsetCommitRequest) *wire.Error {
	tps := make([]TopicPartition, len(r.Offsets))
	for i, o := range r.Offsets {
		tps[i] = TopicPartition{Topic: o.Topic, Partition: o.Partition}
	}
	return c.CheckCommit(r.Group, r.MemberID, tps)
}

// CheckEmpty is nil when group has no members (a deletion, an offset reset
// by an operator), else NonEmptyGroup.
func (c *Coordinator) CheckEmpty(group string) *wire.Error {
	g := c.groups[group]
	if g == nil {
		return nil
	}
	departed := 0
	for _, m := range g.members {
		if m.departed {
			departed++
		}
	}
	if departed == 0 {
		return &wire.Error{Code: wire.NonEmptyGroup, Message: fmt.Sprintf(
			"group %q has %d members: stop its consumers first", group, len(g.members))}
	}
	return &wire.Error{Code: wire.NonEmptyGroup, Message: fmt.Sprintf(
		"group %q has %d members, %d of them static members that left and are expected back: stop the consumers, "+
			"then wait %v for those", group, len(g.members), departed, c.cfg.SessionTimeout)}
}

// Groups lists the groups with members, sorted.
func (c *Coordinator) Groups() []string {
	out := make([]string, 0, len(c.groups))
	for name := range c.groups {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// Members is how many members all groups have.
func (c *Coordinator) Members() int {
	n := 0
	for _, g := range c.groups {
		n += len(g.members)
	}
	return n
}

// Count is how many members group has.
func (c *Coordinator) Count(group string) int {
	if g := c.groups[group]; g != nil {
		return len(g.members)
	}
	return 0
}

// Describe lists group's members, sorted by id.
func (c *Coordinator) Describe(group string) []wire.GroupMember {
	g := c.groups[group]
	if g == nil {
		return nil
	}
	var out []wire.GroupMember
	for _, m := range g.sorted() {
		owned := make([]TopicPartition, 0, len(m.owned))
		for tp := range m.owned {
			owned = append(owned, tp)
		}
		slices.SortFunc(owned, TopicPartition.compare)
		out = append(out, wire.GroupMember{MemberID: m.id, ClientID: m.clientID, MemberEpoch: m.epoch,
			Topics: slices.Clone(m.topics), Assigned: grouped(m.assigned), Owned: grouped(owned),
			LastHeartbeatMs: m.last.UnixMilli(), InstanceID: m.instance, Departed: m.departed, TopicPattern: m.patternSrc})
	}
	return out
}
