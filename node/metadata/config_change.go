package metadata

import (
	"fmt"
	"maps"
	"slices"

	"paymentlog/wire"
)

// TopicConfigChanged (record type 11) changes the configs, the min ISR
// and/or the replication factor of one topic incarnation after its
// creation: Set keys are set, Delete keys removed (their defaults apply
// again), MinISR, when not 0, becomes the topic's min ISR, and RF, when not
// 0, its replication factor (DecideReplicationFactor: the same entry carries
// the partitions' reassignments to that many replicas). The change is a
// delta, not the whole config map, so two changes decided one after the
// other both take effect.
//
// It applies when the topic exists with ID, no key is both set and deleted,
// the resulting configs pass ValidateConfigs (which accepts unknown keys:
// a request refuses them, a record does not), RF is 0 or within [1,
// MaxReplicas] and MinISR is 0 or within [1, RF] (the new RF when both
// change). The entry that carries it may also carry PartitionChanges that
// the change made possible (unclean leader elections) or asks for
// (reassignments to the new replication factor).
type TopicConfigChanged struct {
	Name   string            `msgpack:"name"`
	ID     string            `msgpack:"id"`
	Set    map[string]string `msgpack:"set"`
	Delete []string          `msgpack:"del"`
	MinISR int32             `msgpack:"min_isr"`      // 0: unchanged
	RF     int32             `msgpack:"rf,omitempty"` // 0: unchanged
}

// TypeTopicConfigChanged is TopicConfigChanged's record type. Part of the
// format: never renumber.
const TypeTopicConfigChanged RecordType = 11

func (TopicConfigChanged) Type() RecordType { return TypeTopicConfigChanged }
func (TopicConfigChanged) Version() uint8   { return 1 }

func init() { typeNames[TypeTopicConfigChanged] = "TopicConfigChanged" }

// applyTopicConfigChanged applies r; it returns a non-empty reason when
// rejected.
func (b *builder) applyTopicConfigChanged(r TopicConfigChanged) string {
	t, ok := b.next.topics[r.Name]
	if !ok || t.ID != r.ID {
		return "no such topic"
	}
	if len(r.Set) > MaxConfigs || len(r.Delete) > MaxConfigs {
		return fmt.Sprintf("more than %d configs changed", MaxConfigs)
	}
	for _, k := range r.Delete {
		if _, both := r.Set[k]; both {
			return fmt.Sprintf("config %s both set and deleted", k)
		}
	}
	rf := t.RF
	if r.RF != 0 {
		if r.RF < 1 || r.RF > MaxReplicas {
			return fmt.Sprintf("replication factor %d out of range", r.RF)
		}
		rf = r.RF
	}
	if r.MinISR != 0 && (r.MinISR < 1 || r.MinISR > rf) {
		return fmt.Sprintf("min ISR %d out of range", r.MinISR)
	}
	if r.MinISR == 0 && t.MinISR > rf {
		return fmt.Sprintf("replication factor %d is below the min ISR %d", rf, t.MinISR)
	}
	cfg := maps.Clone(t.Configs)
	if cfg == nil {
		cfg = map[string]string{}
	}
	for _, k := range r.Delete {
		delete(cfg, k)
	}
	maps.Copy(cfg, r.Set)
	if err := ValidateConfigs(cfg); err != nil {
		return err.Error()
	}
	if len(cfg) == 0 {
		cfg = nil
	}
	mt := b.mutableTopic(r.Name)
	mt.Configs = cfg
	if r.MinISR != 0 {
		mt.MinISR = r.MinISR
	}
	if r.RF != 0 {
		mt.RF = r.RF
	}
	b.configsChanged = append(b.configsChanged, TopicRef{r.Name, r.ID})
	return ""
}

// formatTopicConfigChanged renders r on one line.
func formatTopicConfigChanged(r TopicConfigChanged) string {
	s := fmt.Sprintf("TopicConfigChanged %s id=%s", r.Name, r.ID)
	if r.MinISR != 0 {
		s += fmt.Sprintf(" min_isr=%d", r.MinISR)
	}
	if r.RF != 0 {
		s += fmt.Sprintf(" rf=%d", r.RF)
	}
	for _, k := range slices.Sorted(maps.Keys(r.Set)) {
		s += fmt.Sprintf(" %s=%s", k, r.Set[k])
	}
	for _, k := range r.Delete {
		s += " -" + k
	}
	return s
}

// AlterConfigsEvent is a request to change one topic's configs.
type AlterConfigsEvent struct {
	Topic  string
	Set    map[string]string
	Delete []string
}

// DecideAlterConfigs validates a config change with the rules of creation
// (ValidateNewConfigs: unknown keys are refused, InvalidConfig naming the
// key) and returns the TopicConfigChanged that carries it out, followed by
// the PartitionChanges it makes possible: with unclean.leader.election.enable
// now true, every offline partition of the topic that has a live replica
// gets a leader from outside its ISR (accepting the loss of what only the
// lost ISR members held), as a broker fencing would have done had the config
// been set then.
//
// min.insync.replicas is taken in Set and Delete (delete: min(DefaultMinISR,
// RF)) and becomes the record's MinISR. Deleting a key that is not known is
// allowed only when the topic holds it (stored by an older version).
// segment.bytes cannot change (segments are sized when a partition's log
// opens): setting it to another value, or deleting it while set, is refused.
// A change that changes nothing returns no records (a retry of a committed
// change succeeds).
func DecideAlterConfigs(img *Image, ev AlterConfigsEvent) ([]Record, error) {
	t, ok := img.Topic(ev.Topic)
	if !ok {
		return nil, werr(wire.UnknownTopicOrPartition, "topic %q does not exist", ev.Topic)
	}
	if len(ev.Set) == 0 && len(ev.Delete) == 0 {
		return nil, werr(wire.InvalidRequest, "topic %q: no config to set or delete", ev.Topic)
	}
	if len(ev.Set) > MaxConfigs || len(ev.Delete) > MaxConfigs {
		return nil, werr(wire.InvalidConfig, "more than %d configs in one change", MaxConfigs)
	}
	if err := ValidateNewConfigs(ev.Set); err != nil {
		return nil, werr(wire.InvalidConfig, "%v", err)
	}
	if compactsConfigs(ev.Set) && !compactsConfigs(t.Configs) {
		if err := requireVersion(img, compactionVersion, "compacting a topic (cleanup.policy=compact)"); err != nil {
			return nil, err
		}
	}
	var del []string
	for _, k := range ev.Delete {
		if _, both := ev.Set[k]; both {
			return nil, werr(wire.InvalidConfig, "config %s is both set and deleted", k)
		}
		if _, held := t.Configs[k]; !held {
			if err := checkNewConfigKey(k); err != nil {
				return nil, werr(wire.InvalidConfig, "%v", err)
			}
		}
		if !slices.Contains(del, k) {
			del = append(del, k)
		}
	}
	rec := TopicConfigChanged{Name: t.Name, ID: t.ID}
	minISR := t.MinISR
	if v, ok := ev.Set[ConfigMinInsyncReplicas]; ok {
		minISR, _ = parseMinISR(v) // validated above
	}
	if slices.Contains(del, ConfigMinInsyncReplicas) {
		minISR = min(DefaultMinISR, t.RF)
	}
	if minISR > t.RF {
		return nil, werr(wire.InvalidConfig, "config %s: %d exceeds the replication factor %d of topic %q",
			ConfigMinInsyncReplicas, minISR, t.RF, t.Name)
	}
	if n, p, ok := fewestReplicas(t); ok && minISR > t.MinISR && minISR > int32(n) {
		return nil, werr(wire.InvalidConfig, "config %s: %d exceeds the %d replicas of %s-%d (a cancelled change of the replication factor left it there; reassign it first)",
			ConfigMinInsyncReplicas, minISR, n, t.Name, p)
	}
	if minISR != t.MinISR {
		rec.MinISR = minISR
	}
	cur, curOK := t.Configs[ConfigSegmentBytes]
	if v, ok := ev.Set[ConfigSegmentBytes]; (ok && (!curOK || v != cur)) || (curOK && slices.Contains(del, ConfigSegmentBytes)) {
		return nil, werr(wire.InvalidConfig, "config %s cannot be changed after topic %q is created: "+
			"segments are sized when a partition's log opens", ConfigSegmentBytes, t.Name)
	}
	for k, v := range ev.Set {
		if k == ConfigMinInsyncReplicas {
			continue
		}
		if cur, ok := t.Configs[k]; !ok || cur != v {
			if rec.Set == nil {
				rec.Set = map[string]string{}
			}
			rec.Set[k] = v
		}
	}
	for _, k := range del {
		if _, ok := t.Configs[k]; ok && k != ConfigMinInsyncReplicas {
			rec.Delete = append(rec.Delete, k)
		}
	}
	if rec.Set == nil && rec.Delete == nil && rec.MinISR == 0 {
		return nil, nil
	}
	after, _, err := img.ApplyEntry(img.Offset(), []Record{rec})
	if err != nil {
		// The checks above are those of the record and more.
		return nil, werr(wire.InvalidConfig, "topic %q: %v", t.Name, err)
	}
	out := []Record{rec}
	at, _ := after.Topic(t.Name)
	for _, p := range at.Partitions {
		switch {
		case at.UncleanLeaderElection() && p.Leader == NoLeader:
			if c, ok := partitionChange(p, p.ISR, after.Live, true, at.MinISR); ok {
				out = append(out, c)
			}
		case len(p.ELR) > 0:
			// A lower min ISR lets the HW move again with the ISR alone:
			// the ELR would fall behind it (nextELR).
			if c, ok := changeTo(p, p.ISR, p.Leader, nextELR(p, p.ISR, at.MinISR)); ok {
				out = append(out, c)
			}
		}
	}
	return out, nil
}
