package metadata

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/vmihailenco/msgpack/v5"

	"paymentlog/wire"
)

// snapshotVersion is the first byte of snapshot bytes. Part of the format.
const snapshotVersion = 1

// ErrCorruptSnapshot is wrapped by every snapshot decoding error.
var ErrCorruptSnapshot = errors.New("metadata: corrupt snapshot")

// ErrSnapshotVersion is wrapped (with ErrCorruptSnapshot) by the error for
// a snapshot in a format version this build does not read: written by a
// newer (or older, incompatible) paymentlog, not damaged.
var ErrSnapshotVersion = errors.New("metadata: unsupported snapshot format version")

// snapshotV1 is the canonical encoding of an image (field tags are part of
// the format).
type snapshotV1 struct {
	Offset         uint64       `msgpack:"offset"`
	ControllerID   int32        `msgpack:"controller"`
	ControllerTerm uint64       `msgpack:"term"`
	NextProducerID int64        `msgpack:"next_pid"`
	Brokers        []snapBroker `msgpack:"brokers"`
	Topics         []snapTopic  `msgpack:"topics"`
	// PrevControllerID: 0 when absent (snapshots written before it
	// existed) reads as -1, none; node ids are > 0.
	PrevControllerID int32 `msgpack:"prev_controller"`
	// ClusterConfigs, sorted by key; omitted when none (so images without
	// any encode, and hash, as before they existed).
	ClusterConfigs [][2]string `msgpack:"cluster_configs,omitempty"`
	// MetadataVersion: omitted while 1, read as 1 when absent.
	MetadataVersion int32 `msgpack:"metadata_version,omitempty"`
	// Groups (consumer groups' committed offsets, groups.go), sorted by
	// name; omitted when none.
	Groups []snapGroup `msgpack:"groups,omitempty"`
	// ACLs (acls.go), sorted by acl.Compare; omitted when none.
	ACLs []wire.ACLBinding `msgpack:"acls,omitempty"`
	// Quotas (client quotas, quotas.go), sorted by principal (the default,
	// "", first), each with at least one value, keys sorted; omitted when
	// none.
	Quotas []snapQuota `msgpack:"quotas,omitempty"`
}

type snapBroker struct {
	ID                 int32  `msgpack:"id"`
	Addr               string `msgpack:"addr"`
	Incarnation        int64  `msgpack:"inc"`
	ControllerEligible bool   `msgpack:"ctrl"`
	Fenced             bool   `msgpack:"fenced"`
	ShuttingDown       bool   `msgpack:"shutdown"`
	CatchUpOffset      uint64 `msgpack:"catchup"`
	MetadataVersion    int32  `msgpack:"mv,omitempty"`   // 0 (version 1) omitted, as before versions existed
	Rack               string `msgpack:"rack,omitempty"` // "" omitted, as before racks existed
}

type snapTopic struct {
	Name       string             `msgpack:"name"`
	ID         string             `msgpack:"id"`
	RF         int32              `msgpack:"rf"`
	MinISR     int32              `msgpack:"min_isr"`
	Configs    [][2]string        `msgpack:"configs"` // sorted by key
	Partitions []PartitionCreated `msgpack:"partitions"`
}

func (m *Image) toSnapshot() snapshotV1 {
	s := snapshotV1{
		Offset: m.offset, ControllerID: m.controllerID, ControllerTerm: m.controllerTerm,
		NextProducerID: m.nextProducerID, PrevControllerID: m.prevControllerID,
		Brokers: []snapBroker{},
		Topics:  []snapTopic{},
	}
	for _, b := range m.Brokers() {
		s.Brokers = append(s.Brokers, snapBroker(b))
	}
	for _, t := range m.Topics() {
		st := snapTopic{Name: t.Name, ID: t.ID, RF: t.RF, MinISR: t.MinISR, Configs: [][2]string{},
			Partitions: make([]PartitionCreated, 0, len(t.Partitions))}
		for k, v := range t.Configs {
			st.Configs = append(st.Configs, [2]string{k, v})
		}
		slices.SortFunc(st.Configs, func(a, b [2]string) int { return cmp.Compare(a[0], b[0]) })
		for _, p := range t.Partitions {
			st.Partitions = append(st.Partitions, PartitionCreated(p))
		}
		s.Topics = append(s.Topics, st)
	}
	if m.metadataVersion > 1 {
		s.MetadataVersion = m.metadataVersion
	}
	for _, k := range slices.Sorted(maps.Keys(m.clusterConfigs)) {
		s.ClusterConfigs = append(s.ClusterConfigs, [2]string{k, m.clusterConfigs[k]})
	}
	s.Groups = m.snapGroups()
	s.ACLs = slices.Clone(m.acls.Bindings()) // nil when none
	s.Quotas = m.snapQuotas()                // nil when none
	return s
}

func encodeSnapshot(s snapshotV1) []byte {
	var buf bytes.Buffer
	buf.WriteByte(snapshotVersion)
	enc := msgpack.NewEncoder(&buf)
	enc.SetSortMapKeys(true)
	if err := enc.Encode(&s); err != nil {
		panic(fmt.Sprintf("metadata: encoding a snapshot cannot fail: %v", err))
	}
	return buf.Bytes()
}

// MarshalSnapshot encodes the image (see "Snapshot format" in the package doc).
func (m *Image) MarshalSnapshot() []byte { return encodeSnapshot(m.toSnapshot()) }

// Hash is a SHA-256 over the image's canonical encoding without its offset:
// two nodes that applied the same records hold images with equal hashes.
func (m *Image) Hash() [sha256.Size]byte {
	s := m.toSnapshot()
	s.Offset = 0
	return sha256.Sum256(encodeSnapshot(s))
}

// UnmarshalSnapshot decodes snapshot bytes into an image, checking every
// length before allocating and every invariant the image relies on. offset
// overrides the offset stored in the snapshot when non-zero (raft's snapshot
// index is authoritative).
func UnmarshalSnapshot(offset uint64, b []byte) (*Image, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrCorruptSnapshot)
	}
	if b[0] != snapshotVersion {
		return nil, fmt.Errorf("%w: %w %d (this build reads version %d; was it written by another paymentlog version?)",
			ErrCorruptSnapshot, ErrSnapshotVersion, b[0], snapshotVersion)
	}
	var s snapshotV1
	if err := unmarshalChecked(b[1:], &s); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorruptSnapshot, err)
	}
	if offset != 0 {
		s.Offset = offset
	}
	m := EmptyImage()
	m.offset, m.controllerID, m.controllerTerm, m.nextProducerID = s.Offset, s.ControllerID, s.ControllerTerm, s.NextProducerID
	if s.PrevControllerID > 0 {
		m.prevControllerID = s.PrevControllerID
	}
	if m.nextProducerID < 0 {
		return nil, fmt.Errorf("%w: negative next producer id", ErrCorruptSnapshot)
	}
	switch {
	case s.MetadataVersion > MetadataVersion:
		return nil, fmt.Errorf("%w: %w: metadata version %d (this build applies up to %d: upgrade it)",
			ErrCorruptSnapshot, ErrSnapshotVersion, s.MetadataVersion, MetadataVersion)
	case s.MetadataVersion < 0:
		return nil, fmt.Errorf("%w: metadata version %d", ErrCorruptSnapshot, s.MetadataVersion)
	case s.MetadataVersion > 1:
		m.metadataVersion = s.MetadataVersion
	}
	if len(s.ClusterConfigs) > MaxConfigs {
		return nil, fmt.Errorf("%w: %d cluster configs", ErrCorruptSnapshot, len(s.ClusterConfigs))
	}
	for i, kv := range s.ClusterConfigs {
		if i > 0 && kv[0] <= s.ClusterConfigs[i-1][0] {
			return nil, fmt.Errorf("%w: cluster configs not sorted or repeated", ErrCorruptSnapshot)
		}
		if m.clusterConfigs == nil {
			m.clusterConfigs = map[string]string{}
		}
		m.clusterConfigs[kv[0]] = kv[1]
	}
	if err := ValidateClusterConfigs(m.clusterConfigs); err != nil {
		return nil, fmt.Errorf("%w: cluster configs: %v", ErrCorruptSnapshot, err)
	}
	for _, sb := range s.Brokers {
		if sb.ID <= 0 || m.brokers[sb.ID] != nil {
			return nil, fmt.Errorf("%w: broker id %d invalid or repeated", ErrCorruptSnapshot, sb.ID)
		}
		if why := CheckRack(sb.Rack); why != "" {
			return nil, fmt.Errorf("%w: broker %d: %s", ErrCorruptSnapshot, sb.ID, why)
		}
		bs := BrokerState(sb)
		m.brokers[sb.ID] = &bs
	}
	for _, st := range s.Topics {
		if err := ValidateTopicName(st.Name); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCorruptSnapshot, err)
		}
		if m.topics[st.Name] != nil {
			return nil, fmt.Errorf("%w: topic %q repeated", ErrCorruptSnapshot, st.Name)
		}
		if len(st.Partitions) > MaxPartitions {
			return nil, fmt.Errorf("%w: topic %q has %d partitions", ErrCorruptSnapshot, st.Name, len(st.Partitions))
		}
		t := &TopicState{Name: st.Name, ID: st.ID, RF: st.RF, MinISR: st.MinISR}
		if len(st.Configs) > 0 {
			t.Configs = make(map[string]string, len(st.Configs))
			for _, kv := range st.Configs {
				t.Configs[kv[0]] = kv[1]
			}
		}
		if err := ValidateConfigs(t.Configs); err != nil {
			return nil, fmt.Errorf("%w: topic %q: %v", ErrCorruptSnapshot, st.Name, err)
		}
		t.Partitions = make([]PartitionState, 0, len(st.Partitions))
		for i, sp := range st.Partitions {
			p := PartitionState(sp)
			if p.Topic != st.Name || p.TopicID != st.ID || p.Partition != int32(i) {
				return nil, fmt.Errorf("%w: topic %q partition %d misplaced", ErrCorruptSnapshot, st.Name, i)
			}
			if why := validatePartition(p); why != "" {
				return nil, fmt.Errorf("%w: %s-%d: %s", ErrCorruptSnapshot, st.Name, i, why)
			}
			t.Partitions = append(t.Partitions, p)
		}
		m.topics[st.Name] = t
		m.partitionCount += len(t.Partitions)
	}
	if err := m.loadSnapGroups(s.Groups); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorruptSnapshot, err)
	}
	if err := m.loadSnapACLs(s.ACLs); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorruptSnapshot, err)
	}
	if err := m.loadSnapQuotas(s.Quotas); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorruptSnapshot, err)
	}
	return m, nil
}
