package metadata

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// ErrRejected is wrapped by every *RejectError.
var ErrRejected = errors.New("metadata: record rejected")

// RejectError says why a record did not apply. Rejection is deterministic (the
// same on every node) and leaves the image unchanged except for its offset.
type RejectError struct {
	Offset uint64
	Type   RecordType
	Reason string
}

func (e *RejectError) Error() string {
	return fmt.Sprintf("metadata: %v at offset %d rejected: %s", e.Type, e.Offset, e.Reason)
}
func (e *RejectError) Unwrap() error { return ErrRejected }

// Apply applies one record at offset (the raft index of its entry; offsets
// never go backwards). It returns the new image, what changed, and a
// *RejectError when the record did not apply (the new image then differs
// from m only in its offset).
func (m *Image) Apply(offset uint64, r Record) (*Image, Delta, error) {
	return m.ApplyEntry(offset, []Record{r})
}

// ApplyEntry applies the records of one entry in order, atomically: if any
// record is rejected, none applies (the returned image differs from m only in
// its offset, the delta is empty) and the error names the first rejection.
// An entry is one controller decision; applying part of one that was decided
// on a stale image (a paused controller whose proposal slipped through) could
// pass a conditional check by coincidence and commit half a decision.
func (m *Image) ApplyEntry(offset uint64, records []Record) (*Image, Delta, error) {
	if offset < m.offset {
		return m, Delta{}, fmt.Errorf("metadata: offset %d is before the image's %d", offset, m.offset)
	}
	b := newBuilder(m, offset)
	for _, r := range records {
		if reason := b.apply(r); reason != "" {
			next, d := newBuilder(m, offset).finish()
			return next, d, &RejectError{Offset: offset, Type: r.Type(), Reason: reason}
		}
	}
	next, d := b.finish()
	return next, d, nil
}

// builder applies records copy-on-write: maps and topic states shared with
// the base image are copied on first write in this entry only.
type builder struct {
	base, next   *Image
	brokersOwned bool
	topicsOwned  bool
	ownedTopics  map[string]bool
	oldBrokers   map[int32]*BrokerState
	oldParts     map[partKey]*PartitionState
	created      []TopicRef
	deleted      []TopicRef
	// configsChanged lists the topics whose configs, min ISR or replication factor changed.
	configsChanged []TopicRef
	ctrl, pids     bool
	clusterConfigs bool // a ClusterConfigChanged was applied
	// groupsOwned: next.groups is this entry's own map; ownedGroups are
	// the groups copied in this entry (groups.go).
	groupsOwned bool
	ownedGroups map[string]bool
	acls        bool // an ACLsCreated or ACLsDeleted was applied (acls.go)
	quotas      bool // a ClientQuotasChanged was applied (quotas.go)
}

func newBuilder(base *Image, offset uint64) *builder {
	next := *base
	next.offset = offset
	return &builder{
		base: base, next: &next,
		ownedTopics: map[string]bool{},
		oldBrokers:  map[int32]*BrokerState{},
		oldParts:    map[partKey]*PartitionState{},
	}
}

func (b *builder) setBroker(s BrokerState) {
	b.touchBroker(s.ID)
	b.next.brokers[s.ID] = &s
}

// touchBroker notes broker id's state before this entry (for the delta)
// and makes the next image's broker map its own, before a change to it.
func (b *builder) touchBroker(id int32) {
	if _, seen := b.oldBrokers[id]; !seen {
		b.oldBrokers[id] = copyBroker(b.base.brokers[id])
	}
	if !b.brokersOwned {
		b.next.brokers = maps.Clone(b.next.brokers)
		b.brokersOwned = true
	}
}

func (b *builder) touchPartition(topic string, p int32) {
	k := partKey{topic, p}
	if _, seen := b.oldParts[k]; seen {
		return
	}
	var old *PartitionState
	if t := b.base.topics[topic]; t != nil && int(p) < len(t.Partitions) {
		old = copyPartition(&t.Partitions[p])
	}
	b.oldParts[k] = old
}

func (b *builder) ownTopics() {
	if !b.topicsOwned {
		b.next.topics = maps.Clone(b.next.topics)
		b.topicsOwned = true
	}
}

// mutableTopic returns a topic state private to this entry.
func (b *builder) mutableTopic(name string) *TopicState {
	t := b.next.topics[name]
	if b.ownedTopics[name] {
		return t
	}
	b.ownTopics()
	c := *t
	c.Partitions = slices.Clone(t.Partitions)
	b.next.topics[name] = &c
	b.ownedTopics[name] = true
	return &c
}

func (b *builder) finish() (*Image, Delta) {
	var d Delta
	for id, old := range b.oldBrokers {
		n := copyBroker(b.next.brokers[id])
		if old != nil && n != nil && *old == *n {
			continue
		}
		d.Brokers = append(d.Brokers, BrokerDelta{ID: id, Old: old, New: n})
	}
	slices.SortFunc(d.Brokers, func(x, y BrokerDelta) int { return int(x.ID) - int(y.ID) })
	for k, old := range b.oldParts {
		var n *PartitionState
		if t := b.next.topics[k.topic]; t != nil && int(k.partition) < len(t.Partitions) {
			n = copyPartition(&t.Partitions[k.partition])
		}
		if (old == nil && n == nil) || (old != nil && n != nil && old.Equal(*n)) {
			continue
		}
		d.Partitions = append(d.Partitions, PartitionDelta{Topic: k.topic, Partition: k.partition, Old: old, New: n})
	}
	sortPartitionDeltas(d.Partitions)
	// A topic created and deleted within this entry cancels out.
	gone := map[TopicRef]bool{}
	for _, t := range b.deleted {
		gone[t] = true
	}
	for _, t := range b.created {
		if gone[t] {
			delete(gone, t)
			continue
		}
		d.TopicsCreated = append(d.TopicsCreated, t)
	}
	for _, t := range b.deleted {
		if _, stillGone := gone[t]; stillGone || !slices.Contains(b.created, t) {
			d.TopicsDeleted = append(d.TopicsDeleted, t)
		}
	}
	d.ControllerChanged, d.ProducerIDsChanged = b.ctrl, b.pids
	d.ClusterConfigsChanged = b.clusterConfigs && !maps.Equal(b.base.clusterConfigs, b.next.clusterConfigs)
	d.ACLsChanged = b.acls && !aclsEqual(b.base.acls, b.next.acls)
	d.ClientQuotasChanged = b.quotas && !quotasEqual(b.base.quotas, b.next.quotas)
	for _, t := range b.configsChanged {
		if !slices.Contains(d.TopicsConfigChanged, t) {
			d.TopicsConfigChanged = append(d.TopicsConfigChanged, t)
		}
	}
	return b.next, d
}

// apply applies one record; it returns a non-empty reason when rejected.
func (b *builder) apply(r Record) string {
	switch r := r.(type) {
	case ControllerMarker:
		if r.Term < b.next.controllerTerm {
			return fmt.Sprintf("term %d is older than %d", r.Term, b.next.controllerTerm)
		}
		if r.Term == b.next.controllerTerm && r.ControllerID != b.next.controllerID {
			return fmt.Sprintf("term %d belongs to controller %d", r.Term, b.next.controllerID)
		}
		if r.Term != b.next.controllerTerm || r.ControllerID != b.next.controllerID {
			b.next.prevControllerID = b.next.controllerID
			b.next.controllerID, b.next.controllerTerm = r.ControllerID, r.Term
			b.ctrl = true
		}
	case BrokerRegistered:
		if r.ID <= 0 || r.Addr == "" {
			return "broker id must be > 0 and addr set"
		}
		if cur, ok := b.next.brokers[r.ID]; ok && cur.Incarnation == r.Incarnation {
			return "incarnation already registered"
		}
		if r.MetadataVersion < 0 {
			return "negative metadata version"
		}
		if why := CheckRack(r.Rack); why != "" {
			return why
		}
		b.setBroker(BrokerState{ID: r.ID, Addr: r.Addr, Incarnation: r.Incarnation,
			ControllerEligible: r.ControllerEligible, Fenced: true, CatchUpOffset: b.next.offset,
			MetadataVersion: r.MetadataVersion, Rack: r.Rack})
	case BrokerFenced:
		cur, why := b.brokerIncarnation(r.ID, r.Incarnation)
		if why != "" {
			return why
		}
		if cur.Fenced {
			return "already fenced"
		}
		cur.Fenced, cur.CatchUpOffset = true, b.next.offset
		b.setBroker(cur)
	case BrokerUnfenced:
		cur, why := b.brokerIncarnation(r.ID, r.Incarnation)
		if why != "" {
			return why
		}
		if !cur.Fenced {
			return "not fenced"
		}
		cur.Fenced = false
		b.setBroker(cur)
	case BrokerControlledShutdown:
		cur, why := b.brokerIncarnation(r.ID, r.Incarnation)
		if why != "" {
			return why
		}
		if cur.ShuttingDown {
			return "already shutting down"
		}
		cur.ShuttingDown = true
		b.setBroker(cur)
	case TopicCreated:
		if compactsConfigs(r.Configs) {
			b.useVersion(compactionVersion)
		}
		return b.applyTopicCreated(r)
	case PartitionCreated:
		return b.applyPartition(r.Topic, r.TopicID, PartitionState(r), true)
	case PartitionChange:
		return b.applyPartition(r.Topic, r.TopicID, PartitionState(r), false)
	case TopicDeleted:
		t, ok := b.next.topics[r.Name]
		if !ok || t.ID != r.ID {
			return "no such topic"
		}
		for i := range t.Partitions {
			b.touchPartition(r.Name, int32(i))
		}
		b.ownTopics()
		delete(b.next.topics, r.Name)
		delete(b.ownedTopics, r.Name)
		b.next.partitionCount -= len(t.Partitions)
		b.deleted = append(b.deleted, TopicRef{r.Name, r.ID})
		b.dropTopicOffsets(r.Name, r.ID)
	case ProducerIDBlock:
		switch {
		case r.Broker <= 0:
			return "broker id must be > 0"
		case r.Start != b.next.nextProducerID:
			return fmt.Sprintf("block starts at %d, next free id is %d", r.Start, b.next.nextProducerID)
		case r.Len <= 0 || r.Len > MaxProducerIDBlock:
			return fmt.Sprintf("block length %d out of range", r.Len)
		case r.Start > 1<<62:
			return "producer ids exhausted"
		}
		b.next.nextProducerID = r.Start + r.Len
		b.pids = true
	case TopicConfigChanged:
		if r.RF != 0 {
			b.useVersion(2)
		}
		if compactsConfigs(r.Set) {
			b.useVersion(compactionVersion)
		}
		return b.applyTopicConfigChanged(r)
	case ClusterConfigChanged:
		b.useVersion(2)
		return b.applyClusterConfigChanged(r)
	case BrokerUnregistered:
		return b.applyBrokerUnregistered(r)
	case GroupOffsetsCommitted:
		return b.applyGroupOffsetsCommitted(r)
	case GroupDeleted:
		return b.applyGroupDeleted(r)
	case ACLsCreated:
		return b.applyACLsCreated(r)
	case ACLsDeleted:
		return b.applyACLsDeleted(r)
	case ClientQuotasChanged:
		return b.applyClientQuotasChanged(r)
	default:
		return fmt.Sprintf("unknown record %T", r)
	}
	return ""
}

func (b *builder) brokerIncarnation(id int32, inc int64) (BrokerState, string) {
	cur, ok := b.next.brokers[id]
	if !ok {
		return BrokerState{}, "unknown broker"
	}
	if cur.Incarnation != inc {
		return BrokerState{}, fmt.Sprintf("incarnation %d is not the current %d", inc, cur.Incarnation)
	}
	return *cur, ""
}

func (b *builder) applyTopicCreated(r TopicCreated) string {
	if err := ValidateTopicName(r.Name); err != nil {
		return err.Error()
	}
	if err := ValidateConfigs(r.Configs); err != nil {
		return err.Error()
	}
	switch {
	case r.ID == "" || len(r.ID) > 64:
		return "topic id must be 1-64 bytes"
	case r.Partitions < 1 || r.Partitions > MaxPartitions:
		return fmt.Sprintf("partition count %d out of range", r.Partitions)
	case r.RF < 1 || r.RF > MaxReplicas:
		return fmt.Sprintf("replication factor %d out of range", r.RF)
	case r.MinISR < 1 || r.MinISR > r.RF:
		return fmt.Sprintf("min ISR %d out of range", r.MinISR)
	}
	if _, ok := b.next.topics[r.Name]; ok {
		return "topic exists"
	}
	b.ownTopics()
	b.next.topics[r.Name] = &TopicState{Name: r.Name, ID: r.ID, RF: r.RF, MinISR: r.MinISR,
		Configs: maps.Clone(r.Configs), Partitions: make([]PartitionState, 0, r.Partitions)}
	b.ownedTopics[r.Name] = true
	b.created = append(b.created, TopicRef{r.Name, r.ID})
	return ""
}

func (b *builder) applyPartition(topic, topicID string, p PartitionState, create bool) string {
	t, ok := b.next.topics[topic]
	if !ok || t.ID != topicID {
		return "no such topic"
	}
	if why := validatePartition(p); why != "" {
		return why
	}
	n := int32(len(t.Partitions))
	if create {
		if p.Partition != n {
			return fmt.Sprintf("partition %d created out of order (have %d)", p.Partition, n)
		}
		if n >= MaxPartitions {
			return "too many partitions"
		}
		if p.Reassigning() {
			return "a partition is created without a reassignment"
		}
		if len(p.ISR) == 0 {
			return "empty ISR"
		}
		b.touchPartition(topic, p.Partition)
		mt := b.mutableTopic(topic)
		mt.Partitions = append(mt.Partitions, clonePartition(p))
		b.next.partitionCount++
		return ""
	}
	if p.Partition < 0 || p.Partition >= n {
		return "no such partition"
	}
	cur := t.Partitions[p.Partition]
	if p.PartitionEpoch != cur.PartitionEpoch+1 {
		return fmt.Sprintf("partition epoch %d does not follow %d", p.PartitionEpoch, cur.PartitionEpoch)
	}
	if p.LeaderEpoch < cur.LeaderEpoch {
		return fmt.Sprintf("leader epoch %d is older than %d", p.LeaderEpoch, cur.LeaderEpoch)
	}
	if p.Leader != cur.Leader && p.LeaderEpoch == cur.LeaderEpoch {
		return "leader changed without a leader epoch bump"
	}
	b.touchPartition(topic, p.Partition)
	mt := b.mutableTopic(topic)
	mt.Partitions[p.Partition] = clonePartition(p)
	return ""
}

// validatePartition checks the structural invariants of a partition state.
func validatePartition(p PartitionState) string {
	if len(p.Replicas) == 0 || len(p.Replicas) > MaxReplicas {
		return fmt.Sprintf("%d replicas", len(p.Replicas))
	}
	for i, r := range p.Replicas {
		if r <= 0 {
			return fmt.Sprintf("replica id %d", r)
		}
		if slices.Contains(p.Replicas[:i], r) {
			return fmt.Sprintf("replica %d listed twice", r)
		}
	}
	// An empty ISR is an offline partition whose last in-sync replica lost
	// its storage with no eligible leader replica to take its place
	// (dropRestartedReplica): only an unclean election gives it a leader.
	if len(p.ISR) == 0 && p.Leader != NoLeader {
		return "empty ISR with a leader"
	}
	for i, r := range p.ISR {
		if !slices.Contains(p.Replicas, r) {
			return fmt.Sprintf("ISR member %d is not a replica", r)
		}
		if slices.Contains(p.ISR[:i], r) {
			return fmt.Sprintf("ISR member %d listed twice", r)
		}
	}
	if p.Leader != NoLeader && !slices.Contains(p.ISR, p.Leader) {
		return fmt.Sprintf("leader %d is not in the ISR", p.Leader)
	}
	for i, r := range p.ELR {
		switch {
		case !slices.Contains(p.Replicas, r):
			return fmt.Sprintf("ELR member %d is not a replica", r)
		case slices.Contains(p.ELR[:i], r):
			return fmt.Sprintf("ELR member %d listed twice", r)
		case slices.Contains(p.ISR, r):
			return fmt.Sprintf("ELR member %d is in the ISR", r)
		}
	}
	for i, r := range p.Lost {
		switch {
		case len(p.ISR) > 0:
			return "lost replicas named with an ISR"
		case !slices.Contains(p.Replicas, r):
			return fmt.Sprintf("lost replica %d is not a replica", r)
		case slices.Contains(p.Lost[:i], r):
			return fmt.Sprintf("lost replica %d listed twice", r)
		}
	}
	if p.LeaderEpoch < 0 || p.PartitionEpoch < 0 {
		return "negative epoch"
	}
	return validateReassignment(p)
}

func clonePartition(p PartitionState) PartitionState {
	p.Replicas = slices.Clone(p.Replicas)
	p.ISR = slices.Clone(p.ISR)
	p.ELR = slices.Clone(p.ELR)
	p.Adding = slices.Clone(p.Adding)
	p.Removing = slices.Clone(p.Removing)
	p.Lost = slices.Clone(p.Lost)
	return p
}
