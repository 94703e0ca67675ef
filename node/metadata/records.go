package metadata

import "fmt"

// RecordType is the first byte of every encoded record. Part of the format:
// never renumber.
type RecordType uint8

const (
	TypeControllerMarker         RecordType = 1
	TypeBrokerRegistered         RecordType = 2
	TypeBrokerFenced             RecordType = 3
	TypeBrokerUnfenced           RecordType = 4
	TypeBrokerControlledShutdown RecordType = 5
	TypeTopicCreated             RecordType = 6
	TypePartitionCreated         RecordType = 7
	TypePartitionChange          RecordType = 8
	TypeTopicDeleted             RecordType = 9
	TypeProducerIDBlock          RecordType = 10
)

var typeNames = map[RecordType]string{
	TypeControllerMarker: "ControllerMarker", TypeBrokerRegistered: "BrokerRegistered",
	TypeBrokerFenced: "BrokerFenced", TypeBrokerUnfenced: "BrokerUnfenced",
	TypeBrokerControlledShutdown: "BrokerControlledShutdown", TypeTopicCreated: "TopicCreated",
	TypePartitionCreated: "PartitionCreated", TypePartitionChange: "PartitionChange",
	TypeTopicDeleted: "TopicDeleted", TypeProducerIDBlock: "ProducerIDBlock",
}

func (t RecordType) String() string {
	if n, ok := typeNames[t]; ok {
		return n
	}
	return fmt.Sprintf("RecordType(%d)", uint8(t))
}

// Record is one metadata log record. Implementations are the structs below.
type Record interface {
	// Type is the record's type byte.
	Type() RecordType
	// Version is the body version this struct encodes.
	Version() uint8
}

// ControllerMarker is written by a newly elected controller before it decides
// anything; once it is applied locally the controller's image holds every
// earlier committed record.
type ControllerMarker struct {
	ControllerID int32  `msgpack:"controller"`
	Term         uint64 `msgpack:"term"`
}

// BrokerRegistered records a broker process start (a new incarnation). The
// broker starts fenced; it is unfenced once it has applied the metadata log up
// to this record.
type BrokerRegistered struct {
	ID                 int32  `msgpack:"id"`
	Addr               string `msgpack:"addr"`
	Incarnation        int64  `msgpack:"inc"`
	ControllerEligible bool   `msgpack:"ctrl"`
	// MetadataVersion is the highest metadata version the broker's build
	// applies (metadata_version.go); omitted when 0 (version 1).
	MetadataVersion int32 `msgpack:"mv,omitempty"`
	// Rack is the broker's failure domain (--rack; racks.go); omitted when
	// not set. Older builds ignore it (they place replicas without racks).
	Rack string `msgpack:"rack,omitempty"`
}

// BrokerFenced marks an incarnation fenced: it may lead nothing and is in no
// ISR (the same entry carries the PartitionChanges that make it so).
type BrokerFenced struct {
	ID          int32 `msgpack:"id"`
	Incarnation int64 `msgpack:"inc"`
}

// BrokerUnfenced marks an incarnation alive again.
type BrokerUnfenced struct {
	ID          int32 `msgpack:"id"`
	Incarnation int64 `msgpack:"inc"`
}

// BrokerControlledShutdown marks an incarnation as shutting down: it is no
// longer eligible to lead or to join an ISR. Cleared by a new registration.
type BrokerControlledShutdown struct {
	ID          int32 `msgpack:"id"`
	Incarnation int64 `msgpack:"inc"`
}

// TopicCreated creates a topic; its partitions follow as PartitionCreated
// records in the same entry.
type TopicCreated struct {
	Name       string            `msgpack:"name"`
	ID         string            `msgpack:"id"`
	Partitions int32             `msgpack:"partitions"`
	RF         int32             `msgpack:"rf"`
	MinISR     int32             `msgpack:"min_isr"`
	Configs    map[string]string `msgpack:"configs"`
}

// PartitionCreated creates one partition of a topic created in the same or an
// earlier entry.
type PartitionCreated struct {
	Topic          string  `msgpack:"t"`
	TopicID        string  `msgpack:"tid"`
	Partition      int32   `msgpack:"p"`
	Replicas       []int32 `msgpack:"replicas"`
	ISR            []int32 `msgpack:"isr"`
	Leader         int32   `msgpack:"leader"`
	LeaderEpoch    int32   `msgpack:"epoch"`
	PartitionEpoch int32   `msgpack:"pepoch"`
	// ELR (eligible leader replicas, KIP-966): replicas out of the ISR
	// that hold every record below the HW (election.go); omitted when
	// empty, so records and snapshots without it read as before.
	ELR []int32 `msgpack:"elr,omitempty"`
	// Adding and Removing describe a reassignment in progress (see
	// reassign.go); absent otherwise, so records without one encode as
	// before.
	Adding   []int32 `msgpack:"adding,omitempty"`
	Removing []int32 `msgpack:"removing,omitempty"`
	// Lost names replicas that lost their storage while they were the
	// partition's last in-sync replica, which left the ISR empty, or while
	// it was empty (see PartitionState.Lost); omitted when empty.
	Lost []int32 `msgpack:"lost,omitempty"`
}

// PartitionChange replaces a partition's state. It applies only when
// PartitionEpoch is the current one plus one and LeaderEpoch is not lower
// than the current one.
type PartitionChange struct {
	Topic          string  `msgpack:"t"`
	TopicID        string  `msgpack:"tid"`
	Partition      int32   `msgpack:"p"`
	Replicas       []int32 `msgpack:"replicas"`
	ISR            []int32 `msgpack:"isr"`
	Leader         int32   `msgpack:"leader"`
	LeaderEpoch    int32   `msgpack:"epoch"`
	PartitionEpoch int32   `msgpack:"pepoch"`
	// ELR (eligible leader replicas, KIP-966): replicas out of the ISR
	// that hold every record below the HW (election.go); omitted when
	// empty, so records and snapshots without it read as before.
	ELR []int32 `msgpack:"elr,omitempty"`
	// Adding and Removing describe a reassignment in progress (see
	// reassign.go); absent otherwise, so records without one encode as
	// before.
	Adding   []int32 `msgpack:"adding,omitempty"`
	Removing []int32 `msgpack:"removing,omitempty"`
	// Lost names replicas that lost their storage while they were the
	// partition's last in-sync replica, which left the ISR empty, or while
	// it was empty (see PartitionState.Lost); omitted when empty.
	Lost []int32 `msgpack:"lost,omitempty"`
}

// TopicDeleted removes a topic and all its partitions.
type TopicDeleted struct {
	Name string `msgpack:"name"`
	ID   string `msgpack:"id"`
}

// ProducerIDBlock allocates producer ids [Start, Start+Len) to Broker.
type ProducerIDBlock struct {
	Broker int32 `msgpack:"broker"`
	Start  int64 `msgpack:"start"`
	Len    int64 `msgpack:"len"`
}

func (ControllerMarker) Type() RecordType         { return TypeControllerMarker }
func (BrokerRegistered) Type() RecordType         { return TypeBrokerRegistered }
func (BrokerFenced) Type() RecordType             { return TypeBrokerFenced }
func (BrokerUnfenced) Type() RecordType           { return TypeBrokerUnfenced }
func (BrokerControlledShutdown) Type() RecordType { return TypeBrokerControlledShutdown }
func (TopicCreated) Type() RecordType             { return TypeTopicCreated }
func (PartitionCreated) Type() RecordType         { return TypePartitionCreated }
func (PartitionChange) Type() RecordType          { return TypePartitionChange }
func (TopicDeleted) Type() RecordType             { return TypeTopicDeleted }
func (ProducerIDBlock) Type() RecordType          { return TypeProducerIDBlock }

func (ControllerMarker) Version() uint8         { return 1 }
func (BrokerRegistered) Version() uint8         { return 1 }
func (BrokerFenced) Version() uint8             { return 1 }
func (BrokerUnfenced) Version() uint8           { return 1 }
func (BrokerControlledShutdown) Version() uint8 { return 1 }
func (TopicCreated) Version() uint8             { return 1 }
func (PartitionCreated) Version() uint8         { return 1 }
func (PartitionChange) Version() uint8          { return 1 }
func (TopicDeleted) Version() uint8             { return 1 }
func (ProducerIDBlock) Version() uint8          { return 1 }

// newRecord returns a pointer to a zero record of type t at version v, or nil
// if this binary does not know that type/version.
func newRecord(t RecordType, v uint8) Record {
	if v != 1 {
		return nil
	}
	switch t {
	case TypeControllerMarker:
		return &ControllerMarker{}
	case TypeBrokerRegistered:
		return &BrokerRegistered{}
	case TypeBrokerFenced:
		return &BrokerFenced{}
	case TypeBrokerUnfenced:
		return &BrokerUnfenced{}
	case TypeBrokerControlledShutdown:
		return &BrokerControlledShutdown{}
	case TypeTopicCreated:
		return &TopicCreated{}
	case TypePartitionCreated:
		return &PartitionCreated{}
	case TypePartitionChange:
		return &PartitionChange{}
	case TypeTopicDeleted:
		return &TopicDeleted{}
	case TypeProducerIDBlock:
		return &ProducerIDBlock{}
	case TypeTopicConfigChanged:
		return &TopicConfigChanged{}
	case TypeClusterConfigChanged:
		return &ClusterConfigChanged{}
	case TypeBrokerUnregistered:
		return &BrokerUnregistered{}
	case TypeGroupOffsetsCommitted:
		return &GroupOffsetsCommitted{}
	case TypeGroupDeleted:
		return &GroupDeleted{}
	case TypeACLsCreated:
		return &ACLsCreated{}
	case TypeACLsDeleted:
		return &ACLsDeleted{}
	case TypeClientQuotasChanged:
		return &ClientQuotasChanged{}
	}
	return nil
}

// deref turns the decoded pointer into the value type callers switch on.
func deref(r Record) Record {
	switch x := r.(type) {
	case *ControllerMarker:
		return *x
	case *BrokerRegistered:
		return *x
	case *BrokerFenced:
		return *x
	case *BrokerUnfenced:
		return *x
	case *BrokerControlledShutdown:
		return *x
	case *TopicCreated:
		return *x
	case *PartitionCreated:
		return *x
	case *PartitionChange:
		return *x
	case *TopicDeleted:
		return *x
	case *ProducerIDBlock:
		return *x
	case *TopicConfigChanged:
		return *x
	case *ClusterConfigChanged:
		return *x
	case *BrokerUnregistered:
		return *x
	case *GroupOffsetsCommitted:
		return *x
	case *GroupDeleted:
		return *x
	case *ACLsCreated:
		return *x
	case *ACLsDeleted:
		return *x
	case *ClientQuotasChanged:
		return *x
	}
	return r
}

// MaxProducerIDBlock is the largest producer-id block one record may allocate.
const MaxProducerIDBlock = 1 << 20
