package metadata

import (
	"cmp"
	"maps"
	"slices"
)

// Delta is what changed between two images. Old is nil for something new,
// New is nil for something removed. When deltas are merged (a subscriber that
// fell behind), Old is the state before the first and New the state after the
// last: intermediate states are skipped, so react to epochs and incarnations,
// not only to leader ids.
type Delta struct {
	Brokers       []BrokerDelta    // sorted by id
	TopicsCreated []TopicRef       // in creation order
	TopicsDeleted []TopicRef       // in deletion order
	Partitions    []PartitionDelta // sorted by topic, partition
	// TopicsConfigChanged lists topics whose configs, min ISR or replication factor
	// changed (TopicConfigChanged), in order, each once.
	TopicsConfigChanged []TopicRef
	// ControllerChanged is set when a ControllerMarker was applied.
	ControllerChanged bool
	// ProducerIDsChanged is set when a producer-id block was allocated.
	ProducerIDsChanged bool
	// ClusterConfigsChanged is set when the cluster configs changed
	// (ClusterConfigChanged).
	ClusterConfigsChanged bool
	// ACLsChanged is set when the ACL bindings changed (ACLsCreated,
	// ACLsDeleted): read them from the new image (Image.ACLs).
	ACLsChanged bool
	// ClientQuotasChanged is set when the client quotas changed
	// (ClientQuotasChanged): read them from the new image
	// (Image.ClientQuota, Image.ClientQuotas).
	ClientQuotasChanged bool
}

// TopicRef names one topic incarnation.
type TopicRef struct {
	Name string
	ID   string
}

// BrokerDelta is one broker's change.
type BrokerDelta struct {
	ID       int32
	Old, New *BrokerState
}

// PartitionDelta is one partition's change. Old and New may belong to
// different topic ids when a topic was deleted and re-created.
type PartitionDelta struct {
	Topic     string
	Partition int32
	Old, New  *PartitionState
}

// Empty reports whether nothing changed.
func (d Delta) Empty() bool {
	return len(d.Brokers) == 0 && len(d.TopicsCreated) == 0 && len(d.TopicsDeleted) == 0 &&
		len(d.Partitions) == 0 && !d.ControllerChanged && !d.ProducerIDsChanged && len(d.TopicsConfigChanged) == 0 &&
		!d.ClusterConfigsChanged && !d.ACLsChanged && !d.ClientQuotasChanged
}

type partKey struct {
	topic     string
	partition int32
}

// Merge returns the delta of applying d then later.
func (d Delta) Merge(later Delta) Delta {
	out := Delta{
		ControllerChanged:  d.ControllerChanged || later.ControllerChanged,
		ProducerIDsChanged: d.ProducerIDsChanged || later.ProducerIDsChanged,
		// Possibly changed and changed back, as TopicsConfigChanged.
		ClusterConfigsChanged: d.ClusterConfigsChanged || later.ClusterConfigsChanged,
		ACLsChanged:           d.ACLsChanged || later.ACLsChanged,
		ClientQuotasChanged:   d.ClientQuotasChanged || later.ClientQuotasChanged,
	}
	bs := map[int32]BrokerDelta{}
	for _, b := range d.Brokers {
		bs[b.ID] = b
	}
	for _, b := range later.Brokers {
		if e, ok := bs[b.ID]; ok {
			b.Old = e.Old
		}
		bs[b.ID] = b
	}
	for _, b := range bs {
		// Unchanged, or registered and unregistered within the span.
		if (b.Old != nil && b.New != nil && *b.Old == *b.New) || (b.Old == nil && b.New == nil) {
			continue
		}
		out.Brokers = append(out.Brokers, b)
	}
	slices.SortFunc(out.Brokers, func(a, b BrokerDelta) int { return cmp.Compare(a.ID, b.ID) })

	ps := map[partKey]PartitionDelta{}
	for _, p := range d.Partitions {
		ps[partKey{p.Topic, p.Partition}] = p
	}
	for _, p := range later.Partitions {
		k := partKey{p.Topic, p.Partition}
		if e, ok := ps[k]; ok {
			p.Old = e.Old
		}
		ps[k] = p
	}
	for _, p := range ps {
		if (p.Old == nil && p.New == nil) || (p.Old != nil && p.New != nil && p.Old.Equal(*p.New)) {
			continue
		}
		out.Partitions = append(out.Partitions, p)
	}
	sortPartitionDeltas(out.Partitions)

	// A topic created and deleted within the merged span cancels out.
	deleted := map[TopicRef]bool{}
	for _, t := range later.TopicsDeleted {
		deleted[t] = true
	}
	cancelled := map[TopicRef]bool{}
	for _, t := range d.TopicsCreated {
		if deleted[t] {
			cancelled[t] = true
			continue
		}
		out.TopicsCreated = append(out.TopicsCreated, t)
	}
	out.TopicsDeleted = append(out.TopicsDeleted, d.TopicsDeleted...)
	for _, t := range later.TopicsDeleted {
		if !cancelled[t] {
			out.TopicsDeleted = append(out.TopicsDeleted, t)
		}
	}
	out.TopicsCreated = append(out.TopicsCreated, later.TopicsCreated...)
	for _, t := range append(slices.Clone(d.TopicsConfigChanged), later.TopicsConfigChanged...) {
		if !slices.Contains(out.TopicsConfigChanged, t) {
			out.TopicsConfigChanged = append(out.TopicsConfigChanged, t)
		}
	}
	return out
}

func sortPartitionDeltas(ps []PartitionDelta) {
	slices.SortFunc(ps, func(a, b PartitionDelta) int {
		if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return cmp.Compare(a.Partition, b.Partition)
	})
}

// Diff computes the delta between two images (either may be nil, meaning
// empty). Used after a snapshot restore, where no records were seen.
func Diff(prev, next *Image) Delta {
	if prev == nil {
		prev = EmptyImage()
	}
	if next == nil {
		next = EmptyImage()
	}
	var d Delta
	d.ControllerChanged = prev.controllerID != next.controllerID || prev.controllerTerm != next.controllerTerm
	d.ProducerIDsChanged = prev.nextProducerID != next.nextProducerID
	d.ClusterConfigsChanged = !maps.Equal(prev.clusterConfigs, next.clusterConfigs)
	d.ACLsChanged = !aclsEqual(prev.acls, next.acls)
	d.ClientQuotasChanged = !quotasEqual(prev.quotas, next.quotas)
	ids := map[int32]bool{}
	for id := range prev.brokers {
		ids[id] = true
	}
	for id := range next.brokers {
		ids[id] = true
	}
	for id := range ids {
		o, n := prev.brokers[id], next.brokers[id]
		if o != nil && n != nil && *o == *n {
			continue
		}
		d.Brokers = append(d.Brokers, BrokerDelta{ID: id, Old: copyBroker(o), New: copyBroker(n)})
	}
	slices.SortFunc(d.Brokers, func(a, b BrokerDelta) int { return cmp.Compare(a.ID, b.ID) })
	for _, name := range prev.TopicNames() {
		o := prev.topics[name]
		if n, ok := next.topics[name]; !ok || n.ID != o.ID {
			d.TopicsDeleted = append(d.TopicsDeleted, TopicRef{o.Name, o.ID})
		}
	}
	for _, name := range next.TopicNames() {
		n := next.topics[name]
		if o, ok := prev.topics[name]; !ok || n.ID != o.ID {
			d.TopicsCreated = append(d.TopicsCreated, TopicRef{n.Name, n.ID})
		} else if o.MinISR != n.MinISR || o.RF != n.RF || !maps.Equal(o.Configs, n.Configs) {
			d.TopicsConfigChanged = append(d.TopicsConfigChanged, TopicRef{n.Name, n.ID})
		}
	}
	names := map[string]bool{}
	for n := range prev.topics {
		names[n] = true
	}
	for n := range next.topics {
		names[n] = true
	}
	for name := range names {
		var op, np []PartitionState
		if t := prev.topics[name]; t != nil {
			op = t.Partitions
		}
		if t := next.topics[name]; t != nil {
			np = t.Partitions
		}
		for i := 0; i < max(len(op), len(np)); i++ {
			var o, n *PartitionState
			if i < len(op) {
				o = &op[i]
			}
			if i < len(np) {
				n = &np[i]
			}
			if o != nil && n != nil && o.Equal(*n) {
				continue
			}
			d.Partitions = append(d.Partitions, PartitionDelta{Topic: name, Partition: int32(i), Old: copyPartition(o), New: copyPartition(n)})
		}
	}
	sortPartitionDeltas(d.Partitions)
	return d
}

func copyBroker(b *BrokerState) *BrokerState {
	if b == nil {
		return nil
	}
	c := *b
	return &c
}

func copyPartition(p *PartitionState) *PartitionState {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}
