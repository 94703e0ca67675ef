package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"paymentlog/wire"
)

// A group's members as `group describe` shows them.

// groupMemberJSON is one member in `group describe --json`.
type groupMemberJSON struct {
	MemberID    string                `json:"member_id"`
	ClientID    string                `json:"client_id"`
	MemberEpoch int32                 `json:"member_epoch"`
	Topics      []string              `json:"topics"`
	Assigned    []groupPartitionsJSON `json:"assigned"`
	// Owned is what it reported owning at its last heartbeat: more than
	// Assigned while it releases partitions.
	Owned           []groupPartitionsJSON `json:"owned"`
	LastHeartbeat   string                `json:"last_heartbeat"` // RFC 3339, UTC
	LastHeartbeatMs int64                 `json:"last_heartbeat_ms"`
	// LastHeartbeatAgeMs is how long before describe ran, by this
	// machine's clock (0 when the controller's clock is ahead).
	LastHeartbeatAgeMs int64 `json:"last_heartbeat_age_ms"`
	// InstanceID is a static member's (consume --group-instance-id);
	// Departed says it left for a while: its partitions wait for the
	// next member with its instance id until its session times out.
	InstanceID string `json:"instance_id,omitempty"`
	Departed   bool   `json:"departed,omitempty"`
	// TopicPattern is the regular expression a member subscribed with
	// (Topics: the topics it matches now).
	TopicPattern string `json:"topic_pattern,omitempty"`
}

// groupPartitionsJSON is some partitions of one topic.
type groupPartitionsJSON struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
}

// groupMembers turns the members OffsetFetch answered into their JSON, their
// heartbeats' ages as of now.
func groupMembers(ms []wire.GroupMember, now time.Time) []groupMemberJSON {
	out := make([]groupMemberJSON, 0, len(ms))
	for _, m := range ms {
		out = append(out, groupMemberJSON{MemberID: m.MemberID, ClientID: m.ClientID, MemberEpoch: m.MemberEpoch,
			Topics: nonNilStrings(m.Topics), Assigned: partitionsJSON(m.Assigned), Owned: partitionsJSON(m.Owned),
			LastHeartbeat: commitTime(m.LastHeartbeatMs), LastHeartbeatMs: m.LastHeartbeatMs,
			LastHeartbeatAgeMs: max(now.UnixMilli()-m.LastHeartbeatMs, 0), InstanceID: m.InstanceID, Departed: m.Departed,
			TopicPattern: m.TopicPattern})
	}
	return out
}

func partitionsJSON(gps []wire.GroupPartitions) []groupPartitionsJSON {
	out := make([]groupPartitionsJSON, 0, len(gps))
	for _, gp := range gps {
		out = append(out, groupPartitionsJSON{Topic: gp.Topic, Partitions: gp.Partitions})
	}
	return out
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// printMembers prints the members table: MEMBER, CLIENT (with a static
// member's instance id), ASSIGNED (as TOPIC:P,P,... per topic), LAST
// HEARTBEAT (its age; for a departed static member, when it left).
func printMembers(w io.Writer, members []groupMemberJSON) {
	fmt.Fprintln(w, "MEMBER\tCLIENT\tASSIGNED\tLAST HEARTBEAT")
	for _, m := range members {
		age := (time.Duration(m.LastHeartbeatAgeMs) * time.Millisecond).Round(100 * time.Millisecond)
		client, last := m.ClientID, fmt.Sprintf("%v ago", age)
		if m.InstanceID != "" {
			client += " (instance " + m.InstanceID + ")"
		}
		if m.Departed {
			last = fmt.Sprintf("left %v ago, its instance expected back", age)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", m.MemberID, client, formatPartitions(m.Assigned), last)
	}
}

// formatPartitions formats partitions as "t:0,1 u:3" ("-" for none).
func formatPartitions(gps []groupPartitionsJSON) string {
	var b strings.Builder
	for _, gp := range gps {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(gp.Topic)
		sep := byte(':')
		for _, p := range gp.Partitions {
			b.WriteByte(sep)
			b.WriteString(strconv.Itoa(int(p)))
			sep = ','
		}
	}
	if b.Len() == 0 {
		return "-"
	}
	return b.String()
}
