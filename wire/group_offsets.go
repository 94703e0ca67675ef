package wire

import "fmt"

// Committed offsets of consumer groups (Kafka's OffsetCommit, OffsetFetch,
// ListGroups and DeleteGroups, without group membership): a group is a
// name under which consumers store, per partition, the offset of the next
// record to process, so that a consumer that restarts, or another one that
// takes over, resumes there. The active controller keeps them in the
// metadata log (records GroupOffsetsCommitted and GroupDeleted, metadata
// version 4): they are replicated to every controller, survive any
// minority of failures and a controller failover, and are in every
// snapshot. Like every request to the controller, these may be sent to any
// node: a node that is not the active controller answers NotController
// with the controller as hint, and the client sends it there.
//
// A topic's offsets belong to that topic's incarnation (its id): deleting
// the topic deletes them from every group, and a topic re-created under the
// same name starts without any.

// Frame types of the group requests. Part of the wire format: never
// renumber.
const (
	TypeOffsetCommit = 15
	TypeOffsetFetch  = 16
	TypeListGroups   = 17
	TypeDeleteGroup  = 18
)

// Limits of the group requests, checked by the controller (InvalidRequest
// or InvalidGroupID naming the limit).
const (
	// MaxGroupNameLen is the longest group name; names are topic-name
	// characters (letters, digits, '.', '_', '-'), not "." or "..".
	MaxGroupNameLen = 249
	// MaxCommitOffsets is the most partitions one OffsetCommit may carry.
	MaxCommitOffsets = 10000
	// MaxOffsetMetadataLen is the longest metadata string of one
	// committed offset (Kafka's offset.metadata.max.bytes default 4096).
	MaxOffsetMetadataLen = 4096
	// MaxGroups is the most groups a cluster holds; a commit that would
	// create one more is refused (delete groups no longer used).
	MaxGroups = 10000
)

// CheckGroupName says why name is not a valid group name ("" if it is):
// 1..MaxGroupNameLen letters, digits, '.', '_' and '-', not "." or "..".
func CheckGroupName(name string) string {
	switch {
	case name == "":
		return "group name is empty"
	case len(name) > MaxGroupNameLen:
		return fmt.Sprintf("group name is longer than %d characters", MaxGroupNameLen)
	case name == "." || name == "..":
		return fmt.Sprintf("group name %q is not allowed", name)
	}
	for _, c := range []byte(name) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Sprintf("group name %.128q: only letters, digits, '.', '_' and '-' are allowed", name)
		}
	}
	return ""
}

// TopicInfo is what CheckOffsetCommit needs of a topic: its current id and
// partition count; ok is false when it does not exist.
type TopicInfo func(name string) (id string, partitions int32, ok bool)

// CheckOffsetCommit checks r against OffsetCommitRequest's rules that
// depend only on the request and the topics (not MaxGroups, nor metadata
// versions): nil when r passes, else the refusal with its code.
func CheckOffsetCommit(r *OffsetCommitRequest, topic TopicInfo) *Error {
	refuse := func(code ErrorCode, format string, args ...any) *Error {
		return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
	}
	if why := CheckGroupName(r.Group); why != "" {
		return refuse(InvalidGroupID, "%s", why)
	}
	switch {
	case len(r.Offsets) == 0:
		return refuse(InvalidRequest, "no offsets to commit")
	case len(r.Offsets) > MaxCommitOffsets:
		return refuse(InvalidRequest, "%d offsets in one commit: at most %d", len(r.Offsets), MaxCommitOffsets)
	}
	type key struct {
		topic     string
		partition int32
	}
	seen := make(map[key]bool, len(r.Offsets))
	for _, o := range r.Offsets {
		k := key{o.Topic, o.Partition}
		id, parts, ok := topic(o.Topic)
		switch {
		case seen[k]:
			return refuse(InvalidRequest, "partition %s-%d named twice", o.Topic, o.Partition)
		case !ok:
			return refuse(UnknownTopicOrPartition, "topic %.128q does not exist", o.Topic)
		case o.TopicID != "" && o.TopicID != id:
			return refuse(UnknownTopicOrPartition, "topic %s was deleted and re-created (id %s, the offsets are for %.64s)", o.Topic, id, o.TopicID)
		case o.Partition < 0 || o.Partition >= parts:
			return refuse(UnknownTopicOrPartition, "partition %s-%d does not exist (%d partitions)", o.Topic, o.Partition, parts)
		case o.Offset < 0:
			return refuse(InvalidRequest, "offset %d for %s-%d is negative", o.Offset, o.Topic, o.Partition)
		case o.LeaderEpoch < -1:
			return refuse(InvalidRequest, "leader epoch %d for %s-%d (want -1 or more)", o.LeaderEpoch, o.Topic, o.Partition)
		case len(o.Metadata) > MaxOffsetMetadataLen:
			return refuse(InvalidRequest, "metadata of %s-%d is %d bytes: at most %d", o.Topic, o.Partition, len(o.Metadata), MaxOffsetMetadataLen)
		}
		seen[k] = true
	}
	return nil
}

// GroupOffset is one partition's committed offset.
type GroupOffset struct {
	Topic string `msgpack:"t"`
	// TopicID is the topic incarnation the offset belongs to. In a
	// commit "" means the topic's current id; a different id than the
	// current one is refused with UnknownTopicOrPartition (the topic was
	// deleted and re-created since the consumer read it).
	TopicID   string `msgpack:"tid"`
	Partition int32  `msgpack:"p"`
	// Offset is the next offset to consume (the last processed + 1), >= 0.
	Offset int64 `msgpack:"o"`
	// LeaderEpoch is the leader epoch of the last record processed, -1
	// if unknown (kept for the consumer's truncation checks).
	LeaderEpoch int32 `msgpack:"e"`
	// Metadata is free text stored with the offset (at most
	// MaxOffsetMetadataLen bytes).
	Metadata string `msgpack:"m,omitempty"`
	// CommitTimeMs is when the controller committed the offset (Unix
	// milliseconds); set in OffsetFetch answers, ignored in commits.
	CommitTimeMs int64 `msgpack:"ts,omitempty"`
}

// OffsetCommitRequest (frame type 15) stores offsets for a group, creating
// the group with its first commit. It is all or nothing: refused whole with
// InvalidGroupID (a bad group name), InvalidRequest (no offsets, more than
// MaxCommitOffsets, a partition named twice, a negative offset, metadata too
// long, MaxGroups reached), UnknownTopicOrPartition (a topic or partition
// that does not exist, or an old incarnation's TopicID) and
// UnsupportedVersion (while a registered broker's build applies metadata
// versions below 4). The answer comes once the offsets are committed to the
// metadata log.
type OffsetCommitRequest struct {
	Group   string        `msgpack:"group"`
	Offsets []GroupOffset `msgpack:"offsets"`
	// MemberID is the committing member's (group_members.go), "" for a
	// consumer that is no member. While the group has members, only a
	// member may commit, and only partitions it owns (UnknownMemberID,
	// NonEmptyGroup, InvalidRequest naming the partition).
	MemberID string `msgpack:"member,omitempty"`
	// Audit marks an operator's commit (client.Admin.CommitOffsets, group
	// set-offsets), which the node's audit trail records; consumers' own
	// commits leave it false. Older nodes ignore it.
	Audit bool `msgpack:"audit,omitempty"`
}

// OffsetCommitResponse answers an OffsetCommitRequest. MetadataOffset is
// the metadata offset the commit is in.
type OffsetCommitResponse struct {
	Err            ErrorCode `msgpack:"err"`
	Message        string    `msgpack:"msg"`
	MetadataOffset int64     `msgpack:"moff"`
	ControllerID   int32     `msgpack:"ctrl"` // with NotController: the active controller, -1 if unknown
}

// OffsetFetchRequest (frame type 16) reads a group's committed offsets
// from the active controller (so a consumer always reads the latest commit,
// also one made through another node a moment ago). Topics limits the
// answer to those topics (empty: every topic). A group that does not exist
// answers with no offsets and no error, as Kafka's does; only a bad group
// name is an error (InvalidGroupID).
type OffsetFetchRequest struct {
	Group  string   `msgpack:"group"`
	Topics []string `msgpack:"topics,omitempty"`
	// Members asks for the group's members too (describe).
	Members bool `msgpack:"members,omitempty"`
}

// OffsetFetchResponse answers an OffsetFetchRequest: the offsets sorted by
// topic and partition, with their commit times.
type OffsetFetchResponse struct {
	Err          ErrorCode     `msgpack:"err"`
	Message      string        `msgpack:"msg"`
	ControllerID int32         `msgpack:"ctrl"`
	Offsets      []GroupOffset `msgpack:"offsets"`
	// Members are the group's members, sorted by id, when asked for.
	Members []GroupMember `msgpack:"members,omitempty"`
}

// ListGroupsRequest (frame type 17) lists every group, from the active
// controller.
type ListGroupsRequest struct{}

// GroupSummary is one group in a ListGroups answer.
type GroupSummary struct {
	Group      string `msgpack:"group"`
	Partitions int32  `msgpack:"parts"` // partitions with a committed offset
	// LastCommitMs is the group's latest commit (Unix milliseconds).
	LastCommitMs int64 `msgpack:"last"`
	// Members is how many members it has now (group_members.go).
	Members int32 `msgpack:"members,omitempty"`
}

// ListGroupsResponse answers a ListGroupsRequest, groups sorted by name.
type ListGroupsResponse struct {
	Err          ErrorCode      `msgpack:"err"`
	Message      string         `msgpack:"msg"`
	ControllerID int32          `msgpack:"ctrl"`
	Groups       []GroupSummary `msgpack:"groups"`
}

// DeleteGroupRequest (frame type 18) deletes a group and all its offsets
// (Kafka's DeleteGroups). Refused with GroupIDNotFound for a group that
// does not exist (also after an earlier request deleted it: a client whose
// earlier attempt may have been applied takes that as done), NonEmptyGroup
// while it has members, and InvalidGroupID for a bad name.
type DeleteGroupRequest struct {
	Group string `msgpack:"group"`
}

// DeleteGroupResponse answers a DeleteGroupRequest once the deletion is
// committed; MetadataOffset is the metadata offset it is in.
type DeleteGroupResponse struct {
	Err            ErrorCode `msgpack:"err"`
	Message        string    `msgpack:"msg"`
	MetadataOffset int64     `msgpack:"moff"`
	ControllerID   int32     `msgpack:"ctrl"`
}
