package controller

import (
	"context"
	"slices"
	"strings"
	"time"

	"paymentlog/node/membership"
	"paymentlog/node/metadata"
	"paymentlog/wire"
)

// DefaultGroupExpiryInterval is Config.GroupExpiryInterval's default.
const DefaultGroupExpiryInterval = 10 * time.Second

// CommitOffsets stores a group's offsets once the record is committed (see
// metadata.DecideCommitOffsets), stamped with this controller's clock, if
// the group's membership allows it (members.go).
func (c *Controller) CommitOffsets(ctx context.Context, req wire.OffsetCommitRequest) wire.OffsetCommitResponse {
	ev := metadata.CommitOffsetsEvent{Group: req.Group, Offsets: req.Offsets, NowMs: c.cfg.Now().UnixMilli()}
	var img *metadata.Image
	err := c.checkMemberCommit(req)
	if err == nil {
		img, err = c.submit(ctx, "commit-offsets", func(m *metadata.Image) ([]metadata.Record, error) {
			return metadata.DecideCommitOffsets(m, ev)
		})
	}
	code, msg, hint := c.errorCode(err)
	r := wire.OffsetCommitResponse{Err: code, Message: msg, ControllerID: hint}
	if img != nil {
		r.MetadataOffset = int64(img.Offset())
	}
	if err == nil {
		c.groupCommits.Add(1)
	}
	return r
}

// DeleteGroup removes a group once the record is committed.
func (c *Controller) DeleteGroup(ctx context.Context, req wire.DeleteGroupRequest) wire.DeleteGroupResponse {
	var img *metadata.Image
	err := c.checkGroupEmpty(req.Group)
	if err == nil {
		img, err = c.submit(ctx, "delete-group", func(m *metadata.Image) ([]metadata.Record, error) {
			return metadata.DecideDeleteGroup(m, req.Group)
		})
	}
	code, msg, hint := c.errorCode(err)
	r := wire.DeleteGroupResponse{Err: code, Message: msg, ControllerID: hint}
	if img != nil {
		r.MetadataOffset = int64(img.Offset())
	}
	if err == nil {
		c.log.Info("deleted group", "group", req.Group)
	}
	return r
}

// activeImage returns the image to answer a read from: only the active
// controller answers, and its image holds its own marker, so every commit
// any controller answered before it took over, and every one it answered
// since.
func (c *Controller) activeImage() (*metadata.Image, error) {
	if !c.active() {
		return nil, c.notController()
	}
	return c.cfg.Store.Image(), nil
}

// FetchOffsets answers a group's committed offsets (none for a group that
// does not exist), limited to req.Topics when given.
func (c *Controller) FetchOffsets(_ context.Context, req wire.OffsetFetchRequest) wire.OffsetFetchResponse {
	if why := wire.CheckGroupName(req.Group); why != "" {
		return wire.OffsetFetchResponse{Err: wire.InvalidGroupID, Message: why, ControllerID: -1}
	}
	img, err := c.activeImage()
	if err != nil {
		code, msg, hint := c.errorCode(err)
		return wire.OffsetFetchResponse{Err: code, Message: msg, ControllerID: hint}
	}
	r := wire.OffsetFetchResponse{ControllerID: c.cfg.NodeID, Offsets: []wire.GroupOffset{}}
	if req.Members {
		c.withMembers(func(m *membership.Coordinator) { r.Members = m.Describe(req.Group) })
	}
	g, ok := img.Group(req.Group)
	if !ok {
		return r
	}
	for _, k := range g.SortedOffsets() {
		if len(req.Topics) > 0 && !slices.Contains(req.Topics, k.Topic) {
			continue
		}
		o := g.Offsets[k]
		r.Offsets = append(r.Offsets, wire.GroupOffset{Topic: k.Topic, TopicID: o.TopicID, Partition: k.Partition,
			Offset: o.Offset, LeaderEpoch: o.LeaderEpoch, Metadata: o.Metadata, CommitTimeMs: o.CommitTimeMs})
	}
	return r
}

// ListGroups answers every group, sorted by name.
func (c *Controller) ListGroups(context.Context) wire.ListGroupsResponse {
	img, err := c.activeImage()
	if err != nil {
		code, msg, hint := c.errorCode(err)
		return wire.ListGroupsResponse{Err: code, Message: msg, ControllerID: hint}
	}
	r := wire.ListGroupsResponse{ControllerID: c.cfg.NodeID, Groups: []wire.GroupSummary{}}
	members := map[string]int{}
	c.withMembers(func(m *membership.Coordinator) {
		for _, name := range m.Groups() {
			members[name] = m.Count(name)
		}
	})
	for _, g := range img.Groups() {
		r.Groups = append(r.Groups, wire.GroupSummary{Group: g.Name, Partitions: int32(len(g.Offsets)),
			LastCommitMs: g.LastCommitMs, Members: int32(members[g.Name])})
		delete(members, g.Name)
	}
	for name, n := range members { // groups with members that have not committed yet
		r.Groups = append(r.Groups, wire.GroupSummary{Group: name, Members: int32(n)})
	}
	slices.SortFunc(r.Groups, func(a, b wire.GroupSummary) int { return strings.Compare(a.Group, b.Group) })
	return r
}

// groupExpiry returns the request that deletes the groups past
// offsets.retention.ms, at most once per GroupExpiryInterval (nil
// otherwise); tick only.
func (c *Controller) groupExpiry() *request {
	now := c.cfg.Now()
	if !c.groupsCheckedAt.IsZero() && now.Sub(c.groupsCheckedAt) < c.cfg.GroupExpiryInterval {
		return nil
	}
	c.groupsCheckedAt = now
	return &request{kind: "expire-groups", decide: func(m *metadata.Image) ([]metadata.Record, error) {
		return metadata.DecideExpireGroups(m, now.UnixMilli()), nil
	}}
}
