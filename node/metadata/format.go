package metadata

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// FormatRecord renders a record on one line for logs and test scripts.
func FormatRecord(r Record) string {
	switch r := r.(type) {
	case ControllerMarker:
		return fmt.Sprintf("ControllerMarker controller=%d term=%d", r.ControllerID, r.Term)
	case BrokerRegistered:
		s := fmt.Sprintf("BrokerRegistered id=%d inc=%d addr=%s ctrl=%t", r.ID, r.Incarnation, r.Addr, r.ControllerEligible)
		if r.MetadataVersion != 0 {
			s += fmt.Sprintf(" mv=%d", r.MetadataVersion)
		}
		if r.Rack != "" {
			s += fmt.Sprintf(" rack=%q", r.Rack)
		}
		return s
	case BrokerFenced:
		return fmt.Sprintf("BrokerFenced id=%d inc=%d", r.ID, r.Incarnation)
	case BrokerUnfenced:
		return fmt.Sprintf("BrokerUnfenced id=%d inc=%d", r.ID, r.Incarnation)
	case BrokerControlledShutdown:
		return fmt.Sprintf("BrokerControlledShutdown id=%d inc=%d", r.ID, r.Incarnation)
	case TopicCreated:
		s := fmt.Sprintf("TopicCreated %s id=%s partitions=%d rf=%d min_isr=%d", r.Name, r.ID, r.Partitions, r.RF, r.MinISR)
		for _, k := range slices.Sorted(maps.Keys(r.Configs)) {
			s += fmt.Sprintf(" %s=%s", k, r.Configs[k])
		}
		return s
	case PartitionCreated:
		return "PartitionCreated " + formatPartition(PartitionState(r))
	case PartitionChange:
		return "PartitionChange " + formatPartition(PartitionState(r))
	case TopicDeleted:
		return fmt.Sprintf("TopicDeleted %s id=%s", r.Name, r.ID)
	case ProducerIDBlock:
		return fmt.Sprintf("ProducerIDBlock broker=%d start=%d len=%d", r.Broker, r.Start, r.Len)
	case TopicConfigChanged:
		return formatTopicConfigChanged(r)
	case ClusterConfigChanged:
		return formatClusterConfigChanged(r)
	case BrokerUnregistered:
		return fmt.Sprintf("BrokerUnregistered id=%d inc=%d", r.ID, r.Incarnation)
	case GroupOffsetsCommitted:
		return formatGroupOffsetsCommitted(r)
	case GroupDeleted:
		if r.Expired {
			return fmt.Sprintf("GroupDeleted %s expired", r.Group)
		}
		return fmt.Sprintf("GroupDeleted %s", r.Group)
	case ACLsCreated:
		return formatACLs("ACLsCreated", r.ACLs)
	case ACLsDeleted:
		return formatACLs("ACLsDeleted", r.ACLs)
	case ClientQuotasChanged:
		return formatClientQuotasChanged(r)
	}
	return fmt.Sprintf("%T%+v", r, r)
}

func formatPartition(p PartitionState) string {
	s := fmt.Sprintf("%s-%d replicas=%s isr=%s leader=%d epoch=%d pepoch=%d",
		p.Topic, p.Partition, ids(p.Replicas), ids(p.ISR), p.Leader, p.LeaderEpoch, p.PartitionEpoch)
	if len(p.ELR) > 0 {
		s += " elr=" + ids(p.ELR)
	}
	if p.Reassigning() {
		s += fmt.Sprintf(" adding=%s removing=%s", ids(p.Adding), ids(p.Removing))
	}
	if len(p.Lost) > 0 {
		s += " lost=" + ids(p.Lost)
	}
	return s
}

func ids(s []int32) string {
	parts := make([]string, len(s))
	for i, x := range s {
		parts[i] = fmt.Sprint(x)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// String renders a partition on one line.
func (p PartitionState) String() string { return formatPartition(p) }

// String renders the image, one broker or partition per line, for tests and
// debugging.
func (m *Image) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "offset=%d controller=%d term=%d next_pid=%d\n", m.offset, m.controllerID, m.controllerTerm, m.nextProducerID)
	for _, b := range m.Brokers() {
		st := StateAlive
		if b.Fenced {
			st = StateFenced
		}
		if b.ShuttingDown {
			st += ",shutting-down"
		}
		fmt.Fprintf(&sb, "broker %d inc=%d %s catchup=%d\n", b.ID, b.Incarnation, st, b.CatchUpOffset)
	}
	m.EachPartition(func(p PartitionState) bool {
		fmt.Fprintf(&sb, "%s\n", formatPartition(p))
		return true
	})
	return sb.String()
}
