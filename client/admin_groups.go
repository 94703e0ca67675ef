package client

import (
	"context"
	"errors"

	"paymentlog/wire"
)

// Consumer groups' committed offsets (wire/group_offsets.go): a group is a
// name under which consumers store, per partition, the offset of the next
// record to process. A group may have members too (GroupConsumer,
// wire/group_members.go), which share its topics' partitions; while it
// has some, only they commit its offsets, and it cannot be deleted. Every
// request goes to the active controller, which keeps the offsets in the
// metadata log, so a read sees every commit that was answered, whichever
// node it went through, and the members in memory.

// CommitOffsets stores offsets for group through the active controller
// (Kafka's OffsetCommit), creating the group with its first commit. Each
// offset is the next one to consume (the last processed + 1) with the
// leader epoch of the last record processed (-1 if unknown); TopicID ""
// means the topic's current incarnation. It is all or nothing, and a
// commit of a partition overwrites whatever was committed for it before
// (the last commit wins). It returns once the commit is in the metadata
// log; FetchOffsets sees it at once (it reads from the active controller
// too), so nothing waits for the other nodes.
//
// Errors match (errors.As on *wire.Error, or ErrorCode) wire.InvalidGroupID
// for a bad group name (1 to wire.MaxGroupNameLen letters, digits, '.',
// '_', '-'; not "." or ".."); wire.InvalidRequest for no offsets, more than
// wire.MaxCommitOffsets, a partition named twice, a negative offset,
// metadata longer than wire.MaxOffsetMetadataLen, or a new group beyond
// wire.MaxGroups; wire.UnknownTopicOrPartition for a topic or partition
// that does not exist or a TopicID of an incarnation since deleted;
// wire.NonEmptyGroup while the group has members (only they commit its
// offsets: stop them first); and wire.UnsupportedVersion while a
// registered node's build predates the group records. NotController,
// Timeout and failed calls are retried until ctx ends. The commit is marked
// as an operator's (wire.OffsetCommitRequest.Audit), so the active
// controller's audit trail records it.
func (a *Admin) CommitOffsets(ctx context.Context, group string, offsets []wire.GroupOffset) error {
	return a.commitOffsets(ctx, &wire.OffsetCommitRequest{Group: group, Offsets: offsets, Audit: true})
}

// commitOffsetsAs is CommitOffsets as group member memberID ("" for no
// member). A member's commit is refused with wire.UnknownMemberID when the
// controller does not know it (its session timed out, or the controller
// changed) and wire.InvalidRequest for a partition it does not own.
func (a *Admin) commitOffsetsAs(ctx context.Context, group, memberID string, offsets []wire.GroupOffset) error {
	return a.commitOffsets(ctx, &wire.OffsetCommitRequest{Group: group, Offsets: offsets, MemberID: memberID})
}

// commitOffsets sends req to the active controller.
func (a *Admin) commitOffsets(ctx context.Context, req *wire.OffsetCommitRequest) error {
	var resp wire.OffsetCommitResponse
	_, err := a.toController(ctx, "commit offsets", wire.TypeOffsetCommit, req,
		func() any { resp = wire.OffsetCommitResponse{}; return &resp },
		func() (wire.ErrorCode, string) { return resp.Err, resp.Message })
	// A retry of a commit that may have been applied stores the same
	// offsets again: no refusal can be the first attempt's doing.
	return err
}

// FetchOffsets returns group's committed offsets (Kafka's OffsetFetch),
// read from the active controller, sorted by topic and partition, each with
// its commit time (CommitTimeMs). With topics, only theirs. A group that
// does not exist, or has no offset for the topics, yields none and no
// error; a bad group name yields an error matching wire.InvalidGroupID.
func (a *Admin) FetchOffsets(ctx context.Context, group string, topics ...string) ([]wire.GroupOffset, error) {
	resp, err := a.offsetFetch(ctx, "fetch offsets", &wire.OffsetFetchRequest{Group: group, Topics: topics})
	return resp.Offsets, err
}

// GroupDescription is a group as DescribeGroup reads it.
type GroupDescription struct {
	// Offsets are its committed offsets, as FetchOffsets returns them.
	Offsets []wire.GroupOffset
	// Members are its members (GroupConsumers), sorted by member id: each
	// one's subscription, assignment, the partitions it reported owning
	// and its last heartbeat.
	Members []wire.GroupMember
}

// DescribeGroup returns group's committed offsets and members (Kafka's
// DescribeGroups with OffsetFetch), read from the active controller. A
// group that does not exist has neither, and no error; a bad group name
// yields an error matching wire.InvalidGroupID.
func (a *Admin) DescribeGroup(ctx context.Context, group string) (GroupDescription, error) {
	resp, err := a.offsetFetch(ctx, "describe group", &wire.OffsetFetchRequest{Group: group, Members: true})
	return GroupDescription{Offsets: resp.Offsets, Members: resp.Members}, err
}

// offsetFetch sends an OffsetFetch to the active controller.
func (a *Admin) offsetFetch(ctx context.Context, what string, req *wire.OffsetFetchRequest) (wire.OffsetFetchResponse, error) {
	var resp wire.OffsetFetchResponse
	_, err := a.toController(ctx, what, wire.TypeOffsetFetch, req,
		func() any { resp = wire.OffsetFetchResponse{}; return &resp },
		func() (wire.ErrorCode, string) { return resp.Err, resp.Message })
	if err != nil {
		return wire.OffsetFetchResponse{}, err
	}
	return resp, nil
}

// ListGroups returns every group (Kafka's ListGroups), read from the active
// controller, sorted by name: how many partitions each has an offset for,
// its latest commit and how many members it has. A group whose topics were
// all deleted is listed with no partitions until it is deleted; one with
// members that have not committed yet, with no partitions and no commit.
func (a *Admin) ListGroups(ctx context.Context) ([]wire.GroupSummary, error) {
	var resp wire.ListGroupsResponse
	_, err := a.toController(ctx, "list groups", wire.TypeListGroups, &wire.ListGroupsRequest{},
		func() any { resp = wire.ListGroupsResponse{}; return &resp },
		func() (wire.ErrorCode, string) { return resp.Err, resp.Message })
	if err != nil {
		return nil, err
	}
	return resp.Groups, nil
}

// DeleteGroup deletes group and all its offsets through the active
// controller (Kafka's DeleteGroups). A group with members is not deleted
// (wire.NonEmptyGroup: stop them first); consumers using the group
// without membership are not told, and their next commit creates it
// again. Errors match wire.GroupIDNotFound for a group that does not
// exist and wire.InvalidGroupID for a bad name. A retry whose first attempt may have
// been applied (its answer lost, or NotController or Timeout) and that then
// finds the group gone succeeds.
func (a *Admin) DeleteGroup(ctx context.Context, group string) error {
	var resp wire.DeleteGroupResponse
	unsure, err := a.toController(ctx, "delete group", wire.TypeDeleteGroup, &wire.DeleteGroupRequest{Group: group},
		func() any { resp = wire.DeleteGroupResponse{}; return &resp },
		func() (wire.ErrorCode, string) { return resp.Err, resp.Message })
	var we *wire.Error
	if err != nil && unsure && errors.As(err, &we) && we.Code == wire.GroupIDNotFound {
		return nil
	}
	return err
}
