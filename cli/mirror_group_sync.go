package cli

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"slices"

	"paymentlog/client"
	"paymentlog/wire"
)

// Translating consumer groups' committed offsets from the source to the
// target (MirrorMaker 2's checkpoints with sync.group.offsets.enabled):
// translateGroup is the pure rule, groupSyncer applies it for `mirror
// --sync-group-offsets` every --commit-interval, and `mirror
// translate-offsets` on demand (mirror_translate.go).

// groupTranslation is one partition of a group's committed offsets,
// translated.
type groupTranslation struct {
	tp client.TopicPartition
	// dst is tp's copy on the target (the replication policy's name),
	// whose offset is committed.
	dst    client.TopicPartition
	source int64 // committed on the source
	before int64 // committed on the target; -1: none
	// target is the translation (syncMap.translate, or the header scan),
	// at least the target partition's log start; -1: none.
	target int64
	// topicID is the incarnation of the target topic translated into
	// (the commit names it: a topic recreated meanwhile refuses it).
	topicID string
	// note says why the translation is not committed; "" when it is (or
	// when the target group is there already: target == before).
	note string
	// info says something of a translation committed (clamped to the log
	// start, found by the header scan); "" when there is nothing to say.
	info string
	// noSync: not translated for want of an offset sync at or below
	// source (note says so); the header scan may translate it instead.
	noSync bool
}

// commits reports whether the translation is to be committed.
func (g groupTranslation) commits() bool {
	return g.note == "" && g.target >= 0 && g.target != g.before
}

// where names the partition in notes: tp, and its copy when the policy
// renamed it.
func (g groupTranslation) where() string {
	if g.dst.Topic == g.tp.Topic {
		return g.tp.String()
	}
	return fmt.Sprintf("%s (%s on the target)", g.tp, g.dst)
}

// targetPartition is what a translation needs to know of a target
// partition.
type targetPartition struct {
	// topic is the target topic's name (the policy's for the source's).
	topic string
	// topicID is the target topic's current incarnation.
	topicID string
	// logStart and end are its log start offset and high watermark; -1:
	// unknown (its leader did not answer).
	logStart, end int64
}

// targetDescriber describes target topics, each once (in a round of
// group syncing, or a translate-offsets). Its maps are keyed by source
// topic and partition.
type targetDescriber struct {
	a      *client.Admin
	policy replicationPolicy
	// cluster names a's cluster in errors ("": the target).
	cluster   string
	parts     map[client.TopicPartition]targetPartition
	described map[string]bool
}

func newTargetDescriber(a *client.Admin, policy replicationPolicy) *targetDescriber {
	return &targetDescriber{a: a, policy: policy, parts: map[client.TopicPartition]targetPartition{}, described: map[string]bool{}}
}

// describe describes the target topics (the policy's copies) of the
// source offsets that include accepts (nil: all) not described yet, and
// returns the partitions of all described so far, by source partition
// (those of topics missing on the target are not there).
func (t *targetDescriber) describe(ctx context.Context, source []wire.GroupOffset, include func(client.TopicPartition) bool) (map[client.TopicPartition]targetPartition, error) {
	for _, o := range source {
		if t.described[o.Topic] || include != nil && !include(client.TopicPartition{Topic: o.Topic, Partition: o.Partition}) {
			continue
		}
		name := t.policy.targetTopic(o.Topic)
		d, err := t.a.DescribeTopic(ctx, name)
		if err != nil && client.ErrorCode(err) != wire.UnknownTopicOrPartition {
			return nil, fmt.Errorf("describe topic %s on the %s: %w", name, cmp.Or(t.cluster, "target"), err)
		}
		t.described[o.Topic] = true
		for _, p := range d.Partitions {
			t.parts[client.TopicPartition{Topic: o.Topic, Partition: p.Partition}] = targetPartition{topic: name, topicID: d.ID,
				logStart: p.LogStartOffset, end: p.HighWatermark}
		}
	}
	return t.parts, nil
}

// translateGroup translates a group's committed offsets on the source of
// the partitions include accepts (nil: all), sorted by topic and
// partition, given its committed offsets on the target and the target
// partitions (by source partition), into offsets of their copies named by
// policy (MirrorMaker 2's checkpoints: eu1's offsets of payments become
// us1's of eu1.payments with the prefix policy). A partition is translated to the target offset of the sync
// at or below its source offset in the target topic's current incarnation
// (syncMap.translate: conservative, a consumer may see records again,
// never misses one), then settled (groupTranslation.settle); it is not
// committed when there is none (noSync), or no such target partition.
func translateGroup(source, target []wire.GroupOffset, syncs *syncMap, targets map[client.TopicPartition]targetPartition,
	policy replicationPolicy, include func(client.TopicPartition) bool) []groupTranslation {
	before := map[client.TopicPartition]int64{}
	for _, o := range target {
		before[client.TopicPartition{Topic: o.Topic, Partition: o.Partition}] = o.Offset
	}
	var out []groupTranslation
	for _, o := range source {
		tp := client.TopicPartition{Topic: o.Topic, Partition: o.Partition}
		if include != nil && !include(tp) {
			continue
		}
		g := groupTranslation{tp: tp, dst: policy.targetTP(tp), source: o.Offset, before: -1, target: -1}
		if b, ok := before[g.dst]; ok {
			g.before = b
		}
		tgt, ok := targets[tp]
		if !ok {
			g.note = fmt.Sprintf("%s: no such partition on the target", g.where())
			out = append(out, g)
			continue
		}
		g.topicID = tgt.topicID
		if s, ok := syncs.translate(tp, tgt.topicID, o.Offset); ok {
			g.settle(s.target, tgt.logStart)
		} else {
			g.noSync = true
			g.note = fmt.Sprintf("%s: no offset sync at or below source offset %d (not mirrored yet, mirrored without offset syncs, "+
				"or only into a deleted incarnation of the topic)", g.where(), o.Offset)
		}
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b groupTranslation) int { return compareTP(a.tp, b.tp) })
	return out
}

// settle makes target, a translation of g.source, g's: raised to the
// target partition's log start when below it (retention deleted the
// records there: a commit below the log start would have the consumer
// start wherever its auto.offset.reset says, its end with "latest"), and
// not committed when the target group's own offset is past it (a consumer
// of the target moved it: it is never moved back) or the log start is
// unknown.
func (g *groupTranslation) settle(target, logStart int64) {
	g.note, g.noSync = "", false
	switch {
	case logStart < 0:
		g.note = fmt.Sprintf("%s: the target partition's log start is unknown (no leader answered): not translated this time", g.where())
		return
	case target < logStart:
		g.info = fmt.Sprintf("%s: source offset %d translates to %d, below the target's log start %d (retention deleted the records there): committing %d",
			g.where(), g.source, target, logStart, logStart)
		target = logStart
	}
	g.target = target
	if g.before > target {
		g.note = fmt.Sprintf("%s: the target group is at %d, past the translation %d of source offset %d: not moved back", g.where(), g.before, target, g.source)
	}
}

func compareTP(a, b client.TopicPartition) int {
	switch {
	case a.Topic < b.Topic:
		return -1
	case a.Topic > b.Topic:
		return 1
	}
	return int(a.Partition) - int(b.Partition)
}

// groupCommits are the offsets of ts to commit on the target.
func groupCommits(ts []groupTranslation) []wire.GroupOffset {
	var out []wire.GroupOffset
	for _, g := range ts {
		if g.commits() {
			out = append(out, wire.GroupOffset{Topic: g.dst.Topic, TopicID: g.topicID, Partition: g.dst.Partition, Offset: g.target, LeaderEpoch: -1,
				Metadata: fmt.Sprintf("paymentlog mirror: source offset %d", g.source)})
		}
	}
	return out
}

// groupSyncer is --sync-group-offsets: every --commit-interval it
// translates the groups' committed offsets of the partitions this mirror
// process owns, and commits them for the same group on the target, except
// while the group has members there.
type groupSyncer struct {
	src, dst *client.Admin
	// names and pattern (anchored) choose the groups; own, the mirror's,
	// is never one.
	names   []string
	pattern *regexp.Regexp
	own     string
	// policy names the copies; the offsets of topics it never copies
	// (replicationPolicy.isCycle) are not synced.
	policy replicationPolicy
	reader *syncReader
	// active are groups last found with members on the target (said
	// once, until they have none).
	active map[string]bool
	report func(format string, args ...any)
	// failing: the last round failed (said once, until one succeeds).
	failing bool
}

// groups are the source groups to sync now.
func (g *groupSyncer) groups(ctx context.Context) ([]string, error) {
	out := slices.DeleteFunc(slices.Clone(g.names), func(n string) bool { return n == g.own })
	if g.pattern == nil {
		return out, nil
	}
	all, err := g.src.ListGroups(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the source's groups: %w", err)
	}
	for _, s := range all {
		if s.Group != g.own && g.pattern.MatchString(s.Group) && !slices.Contains(out, s.Group) {
			out = append(out, s.Group)
		}
	}
	return out, nil
}

// sync runs one round for the partitions owned. A failure is said once
// (until a round succeeds); the next round tries again. A group that
// fails does not stop the others.
func (g *groupSyncer) sync(ctx context.Context, owned []client.TopicPartition) {
	err := g.round(ctx, owned)
	switch {
	case err != nil && !g.failing:
		g.report("syncing consumer groups' offsets to the target (retried every --commit-interval): %v", err)
		g.failing = true
	case err == nil && g.failing:
		g.report("syncing consumer groups' offsets to the target works again")
		g.failing = false
	}
}

func (g *groupSyncer) round(ctx context.Context, owned []client.TopicPartition) error {
	if len(owned) == 0 {
		return nil
	}
	if err := g.reader.catchUp(ctx); err != nil {
		return err
	}
	groups, err := g.groups(ctx)
	if err != nil {
		return err
	}
	include := func(tp client.TopicPartition) bool { return slices.Contains(owned, tp) && !g.policy.isCycle(tp.Topic) }
	targets := newTargetDescriber(g.dst, g.policy) // each topic described once a round
	var first error                                // the others go on
	for _, name := range groups {
		if err := g.syncGroup(ctx, name, include, targets); err != nil && first == nil {
			first = fmt.Errorf("group %s: %w", name, err)
		}
	}
	return first
}

// syncGroup translates and commits one group's offsets.
func (g *groupSyncer) syncGroup(ctx context.Context, name string, include func(client.TopicPartition) bool, describer *targetDescriber) error {
	src, err := g.src.FetchOffsets(ctx, name)
	if err != nil {
		return fmt.Errorf("its offsets on the source: %w", err)
	}
	dst, err := g.dst.DescribeGroup(ctx, name)
	if err != nil {
		return fmt.Errorf("it on the target: %w", err)
	}
	if len(dst.Members) > 0 {
		g.activeOnTarget(name, true)
		return nil
	}
	targets, err := describer.describe(ctx, src, include)
	if err != nil {
		return err
	}
	commits := groupCommits(translateGroup(src, dst.Offsets, g.reader.syncs, targets, g.policy, include))
	if len(commits) == 0 {
		g.activeOnTarget(name, false)
		return nil
	}
	err = g.dst.CommitOffsets(ctx, name, commits)
	if client.ErrorCode(err) == wire.NonEmptyGroup {
		g.activeOnTarget(name, true) // a member joined meanwhile
		return nil
	}
	if err != nil {
		return fmt.Errorf("commit its offsets on the target: %w", err)
	}
	g.activeOnTarget(name, false)
	return nil
}

// activeOnTarget says when a group starts or stops having members on the
// target (its offsets are not synced meanwhile).
func (g *groupSyncer) activeOnTarget(name string, active bool) {
	if g.active[name] == active {
		return
	}
	g.active[name] = active
	if active {
		g.report("group %s has members on the target: its offsets are not synced while it does", name)
	} else {
		g.report("group %s has no members on the target any more: syncing its offsets", name)
	}
}
