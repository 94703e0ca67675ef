package wire

import (
	"fmt"
	"regexp"
	"slices"
)

// Consumer group membership (Kafka's KIP-848 ConsumerGroupHeartbeat, with
// the assignment computed by the server): consumers that heartbeat under
// one group name share the partitions of the topics they subscribe to,
// each partition consumed by at most one member at a time.
//
// The active controller keeps the members in memory (not in the metadata
// log: a heartbeat a second per consumer would flood it). A controller
// that takes over starts with no members and answers UnknownMemberID; a
// member then joins again (MemberEpoch 0) reporting the partitions it
// still owns, and keeps them unless another member owns them already. For
// one session timeout after it takes over, the new controller hands out
// no partition that no member reports owning in the groups that had
// committed offsets when it took over, so it does not give a partition to
// a second member while the first has not heartbeated yet (a group that
// never committed is not waited for).
//
// A member owns a partition from the answer that assigns it to it until a
// heartbeat of its that no longer reports it. A partition taken from a
// member (a member joined, or left the subscription) is handed to its next
// owner only once the first has reported it released, so no two members
// consume a partition at once unless one of them has lost its membership
// (session timeout, rebalance timeout) and not noticed yet; such a
// member's commits are refused.
//
// A member told to release a partition has its rebalance timeout to do it
// (RebalanceTimeoutMs of its join: the longest its application may take
// between two polls). One that still reports owning it then is removed
// from the group (fenced): its partitions go to the others, and its
// heartbeats and commits are answered FencedMemberEpoch while the
// controller remembers it (a session timeout), after that
// UnknownMemberID. A fenced member releases everything without committing
// and joins again owning nothing.
//
// Static membership (Kafka's group.instance.id): a member that joins with
// an InstanceID and leaves with StaticLeaveEpoch (a restart, a rolling
// deploy) keeps its assignment for a session timeout: no other member gets
// its partitions meanwhile, and the next member to join with the same
// InstanceID takes its place, with a new member id and the same
// assignment, starting at the committed offsets. The old member id is
// fenced (FencedMemberEpoch). A join naming an InstanceID that a member
// holds and has not left that way is refused UnreleasedInstanceID (another
// process with the same instance id, or one that died: its session timeout
// releases it). Offsets are committed as before (OffsetCommit), and while a
// group has members only by a member, for partitions it owns.

// Frame type of the group heartbeat. Part of the wire format: never
// renumber.
const TypeGroupHeartbeat = 19

// Limits of a heartbeat, checked by the controller (InvalidRequest).
const (
	// MaxGroupTopics is the most topics one member may subscribe to.
	MaxGroupTopics = 1000
	// MaxGroupMembers is the most members one group may have; a join
	// beyond it is refused.
	MaxGroupMembers = 1000
	// MaxMemberIDLen bounds a member id (the controller makes them; a
	// longer one was not).
	MaxMemberIDLen = 64
	// MaxClientIDLen bounds the free-text client id shown by describe.
	MaxClientIDLen = 256
	// MaxTopicPatternLen bounds a subscription's regular expression.
	MaxTopicPatternLen = 1000
)

// Member epochs with a meaning of their own in a GroupHeartbeatRequest.
const (
	// JoinEpoch joins the group (MemberID empty, or the id a controller
	// that took over does not know).
	JoinEpoch int32 = 0
	// LeaveEpoch leaves the group: the member's partitions go to the
	// others at once, without waiting for its session to time out.
	LeaveEpoch int32 = -1
	// StaticLeaveEpoch leaves the group for a while (a member with an
	// InstanceID restarting): its partitions wait a session timeout for
	// the next member with its InstanceID. Without an InstanceID it is
	// LeaveEpoch.
	StaticLeaveEpoch int32 = -2
)

// GroupPartitions is a set of partitions of one topic.
type GroupPartitions struct {
	Topic      string  `msgpack:"t"`
	Partitions []int32 `msgpack:"p"` // sorted, no repeats
}

// GroupHeartbeatRequest (frame type 19) joins a group, keeps a member in it,
// reports what it owns and fetches its assignment, or leaves. A member
// heartbeats every HeartbeatIntervalMs of the last answer, and at once
// after it released partitions. Refused with InvalidGroupID (a bad group
// name), InvalidRequest (no topics on a join, more than MaxGroupTopics, a
// bad topic name, partitions named twice, too many members), UnknownMemberID
// (a MemberID this controller does not know: its session timed out, or the
// controller changed; join again, reporting what it owns) and
// NotController; FencedMemberEpoch for a member fenced by its rebalance
// timeout (release everything without committing, then join again).
type GroupHeartbeatRequest struct {
	Group string `msgpack:"group"`
	// MemberID is the id an earlier answer gave, "" on a first join.
	MemberID string `msgpack:"member"`
	// MemberEpoch is JoinEpoch, LeaveEpoch, or the epoch of the last
	// answer (only echoed: the owned partitions are what count).
	MemberEpoch int32 `msgpack:"epoch"`
	// ClientID is free text shown by describe (a host name, a process).
	ClientID string `msgpack:"client,omitempty"`
	// Topics are the topics this member subscribes to, sorted; nil on a
	// heartbeat that keeps the subscription unchanged.
	Topics []string `msgpack:"topics,omitempty"`
	// Owned is every partition this member consumes now: those of its
	// last assignment it has not released.
	Owned []GroupPartitions `msgpack:"owned"`
	// RebalanceTimeoutMs, on a join, is how long this member may take to
	// release a partition it is told to release; 0 takes the controller's
	// default (5 minutes, Kafka's max.poll.interval.ms). Kept from the
	// join: later heartbeats' value is ignored.
	RebalanceTimeoutMs int32 `msgpack:"rbms,omitempty"`
	// InstanceID, on a join, makes the member static: it names the
	// process's place in the group across restarts (a group name's
	// characters and length); "" for a dynamic member.
	InstanceID string `msgpack:"instance,omitempty"`
	// TopicPattern, on a join instead of Topics, subscribes to every
	// topic whose whole name matches this regular expression (Go's RE2
	// syntax, at most MaxTopicPatternLen bytes), as topics are created
	// and deleted (Kafka's SubscribedTopicRegex).
	TopicPattern string `msgpack:"pattern,omitempty"`
}

// GroupHeartbeatResponse answers a GroupHeartbeatRequest with the member's
// whole assignment: the partitions it may consume now. Partitions it owns
// and that are not in it must be released (commit their offsets, stop
// fetching them, heartbeat again at once); partitions in it that it does
// not own start at the group's committed offset.
type GroupHeartbeatResponse struct {
	Err          ErrorCode `msgpack:"err"`
	Message      string    `msgpack:"msg"`
	ControllerID int32     `msgpack:"ctrl"`
	MemberID     string    `msgpack:"member"`
	// MemberEpoch counts this member's assignment changes.
	MemberEpoch int32 `msgpack:"epoch"`
	// HeartbeatIntervalMs is when to heartbeat next; SessionTimeoutMs is
	// how long without a heartbeat the member stays a member.
	HeartbeatIntervalMs int32             `msgpack:"hbms"`
	SessionTimeoutMs    int32             `msgpack:"stms"`
	Assigned            []GroupPartitions `msgpack:"assigned"`
}

// GroupMember is one member in a group description (OffsetFetch with
// Members set).
type GroupMember struct {
	MemberID    string            `msgpack:"member"`
	ClientID    string            `msgpack:"client,omitempty"`
	MemberEpoch int32             `msgpack:"epoch"`
	Topics      []string          `msgpack:"topics"`
	Assigned    []GroupPartitions `msgpack:"assigned"`
	// Owned is what it reported owning at its last heartbeat.
	Owned []GroupPartitions `msgpack:"owned"`
	// LastHeartbeatMs is its last heartbeat (Unix milliseconds).
	LastHeartbeatMs int64 `msgpack:"last"`
	// InstanceID is a static member's; Departed says it left with
	// StaticLeaveEpoch and its assignment waits for its InstanceID.
	InstanceID string `msgpack:"instance,omitempty"`
	Departed   bool   `msgpack:"departed,omitempty"`
	// TopicPattern is the pattern it subscribed with (Topics: the topics
	// it matches now), "" for a member that named its topics.
	TopicPattern string `msgpack:"pattern,omitempty"`
}

// CheckGroupHeartbeat checks r's own rules (not the member's existence):
// nil when r passes, else the refusal with its code.
func CheckGroupHeartbeat(r *GroupHeartbeatRequest) *Error {
	refuse := func(code ErrorCode, format string, args ...any) *Error {
		return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
	}
	if why := CheckGroupName(r.Group); why != "" {
		return refuse(InvalidGroupID, "%s", why)
	}
	switch {
	case len(r.MemberID) > MaxMemberIDLen:
		return refuse(UnknownMemberID, "member id longer than %d bytes", MaxMemberIDLen)
	case len(r.ClientID) > MaxClientIDLen:
		return refuse(InvalidRequest, "client id longer than %d bytes", MaxClientIDLen)
	case r.MemberEpoch < StaticLeaveEpoch:
		return refuse(InvalidRequest, "member epoch %d", r.MemberEpoch)
	case r.InstanceID != "" && CheckGroupName(r.InstanceID) != "":
		return refuse(InvalidRequest, "instance id: %s", CheckGroupName(r.InstanceID))
	case r.RebalanceTimeoutMs < 0:
		return refuse(InvalidRequest, "rebalance timeout %d ms", r.RebalanceTimeoutMs)
	case r.MemberEpoch == JoinEpoch && len(r.Topics) == 0 && r.TopicPattern == "":
		return refuse(InvalidRequest, "a join names no topic to subscribe to")
	case r.TopicPattern != "" && len(r.Topics) > 0:
		return refuse(InvalidRequest, "a subscription names topics or a topic pattern, not both")
	case len(r.TopicPattern) > MaxTopicPatternLen:
		return refuse(InvalidRequest, "topic pattern longer than %d bytes", MaxTopicPatternLen)
	case len(r.Topics) > MaxGroupTopics:
		return refuse(InvalidRequest, "%d topics: at most %d", len(r.Topics), MaxGroupTopics)
	}
	if r.TopicPattern != "" {
		if _, err := TopicPatternRegexp(r.TopicPattern); err != nil {
			return refuse(InvalidRequest, "topic pattern: %v", err)
		}
	}
	for i, t := range r.Topics {
		if i > 0 && r.Topics[i-1] >= t {
			return refuse(InvalidRequest, "topics not sorted or repeated at %q", t)
		}
		if CheckGroupName(t) != "" { // topic names follow the same rule
			return refuse(InvalidRequest, "bad topic name %.128q", t)
		}
	}
	if len(r.Owned) > MaxGroupTopics {
		return refuse(InvalidRequest, "owned partitions of %d topics: at most %d", len(r.Owned), MaxGroupTopics)
	}
	for i, o := range r.Owned {
		if i > 0 && r.Owned[i-1].Topic >= o.Topic {
			return refuse(InvalidRequest, "owned topics not sorted or repeated at %q", o.Topic)
		}
		if len(o.Partitions) > MaxCommitOffsets {
			return refuse(InvalidRequest, "%d owned partitions of %q", len(o.Partitions), o.Topic)
		}
		if !slices.IsSorted(o.Partitions) || len(slices.Compact(slices.Clone(o.Partitions))) != len(o.Partitions) ||
			(len(o.Partitions) > 0 && o.Partitions[0] < 0) {
			return refuse(InvalidRequest, "owned partitions of %q not sorted, repeated or negative", o.Topic)
		}
	}
	return nil
}

// TopicPatternRegexp compiles a subscription's topic pattern: it matches
// a topic whose whole name matches pattern.
func TopicPatternRegexp(pattern string) (*regexp.Regexp, error) {
	// Valid on its own first, so its parentheses balance and the anchors
	// below wrap all of it ("a)|(b" does not compile).
	if _, err := regexp.Compile(pattern); err != nil {
		return nil, err
	}
	return regexp.Compile("^(?:" + pattern + ")$")
}
