package cli

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"paymentlog/client"
	"paymentlog/wire"
)

// How `paymentlog mirror` makes the target's topics fit the source's: a
// pure plan (planTopic) from the two descriptions, and topicSyncer, which
// describes, plans and applies it through the Admin APIs.

// mirrorHeader is the header each mirrored record gets (with
// --source-offset-header): "<source topic>/<partition>/<offset>".
const mirrorHeader = "paymentlog.mirror.source"

// mirrorSkippedConfigs are source topic configs a target topic is not
// created with. The timestamp bounds would refuse a backlog: mirrored
// records keep their source timestamps, however old (MirrorMaker 2 leaves
// out message.timestamp.difference.max.ms, their predecessor, for the same
// reason). The min ISR has a flag of its own.
var mirrorSkippedConfigs = []string{
	"message.timestamp.before.max.ms",
	"message.timestamp.after.max.ms",
	"min.insync.replicas",
}

// topicPlanAction is what the mirror does to a target topic.
type topicPlanAction int

const (
	topicInPlace topicPlanAction = iota // as it should be
	topicCreate                         // missing: create it
	topicGrow                           // fewer partitions: add the missing ones
)

// topicPlan is the change a target topic needs.
type topicPlan struct {
	action topicPlanAction
	// spec is the topic to create (topicCreate), or its name and the
	// partition count to grow to (topicGrow).
	spec client.TopicSpec
}

// topicDefaults are the replication settings of topics the mirror creates:
// 0 takes the source topic's, capped at the target's alive brokers.
type topicDefaults struct {
	replicationFactor, minISR int32
	brokers                   int32 // the target's alive brokers
}

// planTopic decides what the target topic dst (nil: missing), named
// target (the replication policy's name for src), needs to mirror src. It
// refuses a target topic with more partitions than the
// source (records would not land on their partition number's peers, and
// some target partitions would hold no source's records), or with another
// cleanup.policy (a compacted copy of a deleting topic, or the reverse, is
// not a copy).
func planTopic(src client.TopicDescription, dst *client.TopicDescription, target string, d topicDefaults) (topicPlan, error) {
	n := int32(len(src.Partitions))
	what := "topic " + src.Name
	if target != src.Name {
		what = fmt.Sprintf("topic %s (copied to %s)", src.Name, target)
	}
	if dst == nil {
		rf := d.replicationFactor
		if rf == 0 {
			rf = min(src.ReplicationFactor, max(d.brokers, 1))
		}
		minISR := d.minISR
		if minISR == 0 {
			minISR = min(max(src.MinISR, 1), rf)
		}
		configs := maps.Clone(src.Configs)
		for _, k := range mirrorSkippedConfigs {
			delete(configs, k)
		}
		return topicPlan{action: topicCreate, spec: client.TopicSpec{Name: target, Partitions: n,
			ReplicationFactor: rf, MinISR: minISR, Configs: configs}}, nil
	}
	if sp, dp := cleanupPolicy(src.Configs), cleanupPolicy(dst.Configs); sp != dp {
		return topicPlan{}, fmt.Errorf("%s has cleanup.policy=%s on the target and %s on the source: "+
			"refusing to mirror into it (alter one of them, or delete the target topic to have it created as a copy)", what, dp, sp)
	}
	switch m := int32(len(dst.Partitions)); {
	case m > n:
		return topicPlan{}, fmt.Errorf("%s has %d partitions on the target and %d on the source: "+
			"refusing to mirror into it (each record keeps its partition number; delete the target topic to have it created as a copy)",
			what, m, n)
	case m < n:
		return topicPlan{action: topicGrow, spec: client.TopicSpec{Name: target, Partitions: n}}, nil
	}
	return topicPlan{action: topicInPlace, spec: client.TopicSpec{Name: target, Partitions: n}}, nil
}

// cleanupPolicy is a topic's cleanup.policy, normalized ("delete" when
// unset; "compact,delete" for both in either order).
func cleanupPolicy(configs map[string]string) string {
	v := configs["cleanup.policy"]
	if v == "" {
		return "delete"
	}
	parts := strings.Split(v, ",")
	slices.Sort(parts)
	return strings.Join(slices.Compact(parts), ",")
}

// topicSyncer makes target topics fit their source topics (planTopic) and
// remembers the partition count each one was made to fit, so that a
// partition the source added since is noticed (ensure). Used by one
// goroutine. Its maps are keyed by source topic.
type topicSyncer struct {
	src, dst *client.Admin
	defaults topicDefaults
	// policy names each source topic's copy.
	policy replicationPolicy
	// syncsTopic is the mirror's offset syncs topic, never a copy.
	syncsTopic string
	// group is the mirror's group on the source ("": not checked by
	// warnResumed).
	group string
	// fitted is, by topic, the source partition count the target topic
	// has at least.
	fitted map[string]int32
	// report is told of each topic created or grown (a line on stderr).
	report func(format string, args ...any)
	// ids are, by topic, the target topic's ID as first learned by this
	// run (created, or described), before anything was copied into it;
	// kept for the run, even if the topic is recreated meanwhile: the
	// offset syncs name it (mirror_offset_syncs.go says why that is safe).
	ids map[string]string
}

// learnID records topic's target ID, unless one was learned already.
func (s *topicSyncer) learnID(topic, id string) {
	if s.ids == nil {
		s.ids = map[string]string{}
	}
	if _, ok := s.ids[topic]; !ok && id != "" {
		s.ids[topic] = id
	}
}

// ensure syncs the topics of tps whose target may lack a partition of
// tps: a topic not synced yet, or a partition past the count synced.
func (s *topicSyncer) ensure(ctx context.Context, tps []client.TopicPartition) error {
	var need []string
	for _, tp := range tps {
		if n, ok := s.fitted[tp.Topic]; (!ok || tp.Partition >= n) && !slices.Contains(need, tp.Topic) {
			need = append(need, tp.Topic)
		}
	}
	for _, t := range need {
		if err := s.sync(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

// sync describes topic on both clusters and applies planTopic. Another
// mirror process of the group may create or grow the topic at the same
// moment: a create refused with TopicAlreadyExists, or a growth refused
// with InvalidPartitions, plans again once from fresh descriptions.
func (s *topicSyncer) sync(ctx context.Context, topic string) error {
	for attempt := 0; ; attempt++ {
		err := s.syncOnce(ctx, topic)
		if code := client.ErrorCode(err); attempt == 0 && (code == wire.TopicAlreadyExists || code == wire.InvalidPartitions) {
			continue
		}
		return err
	}
}

func (s *topicSyncer) syncOnce(ctx context.Context, topic string) error {
	target := s.policy.targetTopic(topic)
	if why := s.policy.checkTarget(topic); why != "" {
		return fmt.Errorf("topic %s: %s", topic, why)
	}
	if target == s.syncsTopic || target == defaultOffsetSyncsTopic {
		return fmt.Errorf("topic %s: its copy's name %s is the offset syncs topic's", topic, target)
	}
	src, err := s.src.DescribeTopic(ctx, topic)
	if err != nil {
		return fmt.Errorf("describe topic %s on the source: %w", topic, err)
	}
	var dst *client.TopicDescription
	switch d, err := s.dst.DescribeTopic(ctx, target); {
	case err == nil:
		dst = &d
	case client.ErrorCode(err) != wire.UnknownTopicOrPartition:
		return fmt.Errorf("describe topic %s on the target: %w", target, err)
	}
	plan, err := planTopic(src, dst, target, s.defaults)
	if err != nil {
		return err
	}
	copyOf := ""
	if target != topic {
		copyOf = " (a copy of " + topic + ")"
	}
	switch plan.action {
	case topicCreate:
		id, err := s.dst.CreateTopic(ctx, plan.spec)
		if err != nil {
			return fmt.Errorf("create topic %s on the target: %w", target, err)
		}
		s.learnID(topic, id)
		s.report("created topic %s on the target%s: %d partitions, replication factor %d, min ISR %d, configs %s",
			target, copyOf, plan.spec.Partitions, plan.spec.ReplicationFactor, plan.spec.MinISR, configList(plan.spec.Configs))
		s.warnResumed(ctx, topic, target)
	case topicGrow:
		s.learnID(topic, dst.ID)
		if err := s.dst.CreatePartitions(ctx, target, plan.spec.Partitions); err != nil {
			return fmt.Errorf("add partitions to topic %s on the target: %w", target, err)
		}
		s.report("topic %s on the target%s grown from %d to %d partitions, as on the source", target, copyOf, len(dst.Partitions), plan.spec.Partitions)
	case topicInPlace:
		s.learnID(topic, dst.ID)
	}
	s.fitted[topic] = plan.spec.Partitions
	return nil
}

// warnResumed says so when target, just created, will not get topic's
// records from the source's beginning: the mirror's group has committed
// offsets of topic, from which the copy starts. An earlier run copied
// topic elsewhere: under another --replication-policy or --source-alias
// (the old copy keeps its records, the new one starts at the group's
// offsets: a silent partial second copy otherwise), or into a target
// topic since deleted.
func (s *topicSyncer) warnResumed(ctx context.Context, topic, target string) {
	if s.group == "" {
		return
	}
	offs, err := s.src.FetchOffsets(ctx, s.group, topic)
	if err != nil {
		return // the group consumer reads them next, and says why it cannot
	}
	var at []string
	for _, o := range offs {
		if o.Offset > 0 {
			at = append(at, fmt.Sprintf("%d at %d", o.Partition, o.Offset))
		}
	}
	if len(at) == 0 {
		return
	}
	s.report("warning: the copy %s starts at group %s's committed offsets of %s on the source (partition %s), not at the source's beginning: "+
		"an earlier run copied it elsewhere (another --replication-policy or --source-alias, or a target topic since deleted); to copy everything, run with a new --group",
		target, s.group, topic, strings.Join(at, ", "))
}

// configList is "k=v, k=v" sorted by key, or "none".
func configList(cfg map[string]string) string {
	if len(cfg) == 0 {
		return "none"
	}
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(cfg)) {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%s", k, cfg[k])
	}
	return b.String()
}
