package cli

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/wire"
)

// The prefix policy names copies <alias><separator><topic>; isCycle is
// MirrorMaker 2's: a name with the target's alias as a part but the last
// (split at the separator, trailing empty parts dropped) came from the
// target. Identity, and prefix without a target alias, see no cycle.
func TestReplicationPolicyNames(t *testing.T) {
	p := replicationPolicy{prefix: true, sourceAlias: "eu1", separator: ".", targetAlias: "us1"}
	if got := p.targetTopic("payments"); got != "eu1.payments" {
		t.Fatalf("targetTopic(payments) = %q", got)
	}
	if got := (replicationPolicy{}).targetTopic("payments"); got != "payments" {
		t.Fatalf("identity targetTopic(payments) = %q", got)
	}
	for topic, want := range map[string]bool{
		"payments":          false,
		"eu1.payments":      false, // a copy of the source's own (named as if from itself): MirrorMaker 2 copies it
		"us1.payments":      true,  // a copy of the target's payments
		"eu1.us1.payments":  true,  // a copy, through eu1, of a copy of the target's
		"ap1.eu1.payments":  false, // from ap1 through eu1: on to us1
		"payments.us1":      false, // the last part is the topic's own name
		"us1":               false,
		"us1.":              false, // Java's split: ["us1"], not a remote topic
		"a..us1.x":          true,
		"us1x.payments":     false,
		"xus1.payments":     false,
		"us1-payments":      false,
		"ap1.eu1.us1.x.y.z": true,
	} {
		if got := p.isCycle(topic); got != want {
			t.Errorf("isCycle(%q) = %v; want %v", topic, got, want)
		}
	}
	if (replicationPolicy{}).isCycle("us1.payments") || (replicationPolicy{prefix: true, sourceAlias: "eu1", separator: "."}).isCycle("us1.payments") {
		t.Fatal("a cycle without the prefix policy and a target alias")
	}
	under := replicationPolicy{prefix: true, sourceAlias: "eu1", separator: "__", targetAlias: "us1"}
	if under.targetTopic("pay") != "eu1__pay" || !under.isCycle("us1__pay") || under.isCycle("us1.pay") {
		t.Fatal("separator __: wrong names or cycles")
	}
	if why := p.checkTarget(strings.Repeat("a", wire.MaxTopicNameLen-3)); why == "" {
		t.Fatal("a copy's name past the longest topic name passed")
	}
}

// Usage errors (exit 2, one line) before any connection: prefix without
// --source-alias, bad aliases and separators, the aliases of one cluster,
// alias flags with identity, an unknown policy, and a --topics name that
// is a copy of the target's own topic; the variables work too.
func TestMirrorPolicyUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--replication-policy", "prefix"}, "--replication-policy prefix: --source-alias is required"},
		{[]string{"--replication-policy", "default", "--source-alias", "eu1"}, `--replication-policy: "default" is not identity or prefix`},
		{[]string{"--replication-policy", "prefix", "--source-alias", "eu.1"}, `--source-alias: "eu.1" contains the separator "."`},
		{[]string{"--replication-policy", "prefix", "--source-alias", "eu 1"}, `--source-alias: "eu 1" is not a token of letters, digits`},
		{[]string{"--replication-policy", "prefix", "--source-alias", "eu/1"}, `--source-alias: "eu/1" is not a token`},
		{[]string{"--replication-policy", "prefix", "--source-alias", strings.Repeat("a", 65)}, "is longer than 64 bytes"},
		{[]string{"--replication-policy", "prefix", "--source-alias", "_x", "--replication-policy-separator", "_"}, `contains the separator "_"`},
		{[]string{"--replication-policy", "prefix", "--source-alias", "__eu"}, "would make internal topic names"},
		{[]string{"--replication-policy", "prefix", "--source-alias", "eu1", "--replication-policy-separator", "/"}, `--replication-policy-separator: "/" is not`},
		{[]string{"--replication-policy", "prefix", "--source-alias", "eu1", "--replication-policy-separator", ""}, `--replication-policy-separator: "" is not`},
		{[]string{"--replication-policy", "prefix", "--source-alias", "eu1", "--target-alias", "us.1"}, `--target-alias: "us.1" contains the separator`},
		{[]string{"--replication-policy", "prefix", "--source-alias", "eu1", "--target-alias", "eu1"}, "--target-alias and --source-alias are both \"eu1\""},
		{[]string{"--source-alias", "eu1"}, "--source-alias: only with --replication-policy prefix"},
		{[]string{"--target-alias", "us1"}, "--target-alias: only with --replication-policy prefix"},
		{[]string{"--replication-policy-separator", "_"}, "--replication-policy-separator: only with --replication-policy prefix"},
		{[]string{"--replication-policy", "prefix", "--source-alias", "eu1", "--target-alias", "us1", "--topics", "pay,us1.pay"},
			"--topics: us1.pay is a copy of a topic of the target (--target-alias us1): mirroring it back would loop"},
		{[]string{"--replication-policy", "prefix", "--source-alias", "eu1", "--topics", strings.Repeat("p", 247)}, "is longer than 249 bytes"},
	} {
		args := append([]string{"mirror", "--source-bootstrap", "127.0.0.1:1", "--bootstrap", "127.0.0.1:2"}, c.args...)
		if !slices.Contains(c.args, "--topics") {
			args = append(args, "--topics", "pay")
		}
		_, errOut, code := runClientCLI(t, nil, args...)
		oneErrorLine(t, strings.Join(args, " "), code, errOut, 2, c.want)
	}
	// translate-offsets takes the policy too.
	_, errOut, code := runClientCLI(t, nil, "mirror", "translate-offsets", "--source-bootstrap", "127.0.0.1:1", "--bootstrap", "127.0.0.1:2",
		"app", "--replication-policy", "prefix")
	oneErrorLine(t, "translate-offsets --replication-policy prefix", code, errOut, 2, "--source-alias is required")
	t.Setenv("PAYMENTLOG_MIRROR_REPLICATION_POLICY", "prefix")
	t.Setenv("PAYMENTLOG_MIRROR_SOURCE_ALIAS", "eu1")
	t.Setenv("PAYMENTLOG_MIRROR_TARGET_ALIAS", "us1")
	_, errOut, code = runClientCLI(t, nil, "mirror", "--source-bootstrap", "127.0.0.1:1", "--bootstrap", "127.0.0.1:2", "--topics", "us1.pay")
	oneErrorLine(t, "mirror with the policy's variables", code, errOut, 2, "--topics: us1.pay is a copy of a topic of the target")
}

// readSyncs reads every offset sync on the target's syncs topic: key and
// parsed value.
func readSyncs(t *testing.T, c *client.Client) map[string]offsetSync {
	t.Helper()
	out := map[string]offsetSync{}
	for _, m := range readPartitions(t, c, defaultOffsetSyncsTopic)[0] {
		s, err := parseOffsetSync(m.Value)
		if err != nil {
			t.Fatalf("offset sync %q: %v", m.Value, err)
		}
		out[string(m.Key)] = s
	}
	return out
}

func topicID(t *testing.T, c *client.Client, topic string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	d, err := c.Admin().DescribeTopic(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	return d.ID
}

// With --replication-policy prefix --source-alias eu1, source topic
// payments is copied to eu1.payments on the target, with the source's
// partition count and configs, every record (headers naming the source
// topic), offset syncs naming eu1.payments (key, value, topic ID), and
// no topic payments on the target; partitions added on the source are
// added to eu1.payments; a group's source offsets of payments are
// committed on the target as offsets of eu1.payments, by --sync-group-
// offsets and by translate-offsets with the policy (without it, there is
// nothing to translate into); without offset syncs, translate-offsets'
// header scan reads eu1.payments for copies of payments.
func TestMirrorPrefixPolicy(t *testing.T) {
	e := startMirrorEnv(t)
	configs := map[string]string{"retention.ms": "3600000", "max.message.bytes": "65536"}
	createTopic(t, e.srcC, client.TopicSpec{Name: "payments", Partitions: 3, ReplicationFactor: 1, MinISR: 1, Configs: configs})
	for p := range int32(3) {
		produceRecords(t, e.srcC, "payments", p, 0, 1500+int(p))
	}
	commitGroup(t, e.srcC, "app", "payments", map[int32]int64{0: 1200, 1: 10, 2: 1502})
	prefix := []string{"--replication-policy", "prefix", "--source-alias", "eu1"}
	errOut, code := e.mirror(t, append(prefix, "--topics", "payments", "--exit-at-end", "--sync-group-offsets", "app", "--commit-interval", "100ms")...)
	if code != 0 || !strings.Contains(errOut, "created topic eu1.payments on the target (a copy of payments): 3 partitions, replication factor 1, min ISR 1, "+
		"configs max.message.bytes=65536, retention.ms=3600000") {
		t.Fatalf("mirror: exit %d, stderr %q", code, errOut)
	}
	checkPrefixCopy := func(parts int) {
		t.Helper()
		src, dst := readPartitions(t, e.srcC, "payments"), readPartitions(t, e.dstC, "eu1.payments")
		if len(src) != parts || len(dst) != parts {
			t.Fatalf("%d partitions on the source, %d in eu1.payments; want %d", len(src), len(dst), parts)
		}
		for p := range src {
			checkCopies(t, "payments", p, src[p], dst[p])
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if _, err := e.dstC.Admin().DescribeTopic(ctx, "payments"); client.ErrorCode(err) != wire.UnknownTopicOrPartition {
			t.Fatalf("topic payments on the target: %v; want none", err)
		}
		d, err := e.dstC.Admin().DescribeTopic(ctx, "eu1.payments")
		if err != nil || !maps.Equal(d.Configs, configs) {
			t.Fatalf("eu1.payments: configs %v, %v; want %v", d.Configs, err, configs)
		}
	}
	checkPrefixCopy(3)
	id := topicID(t, e.dstC, "eu1.payments")
	syncs := readSyncs(t, e.dstC)
	if len(syncs) != 3 {
		t.Fatalf("offset syncs %v; want one key per partition", syncs)
	}
	for k, s := range syncs {
		if !strings.HasPrefix(k, "eu1.payments/") || s.tp.Topic != "payments" || s.targetTopic() != "eu1.payments" || s.topicID != id {
			t.Fatalf("offset sync %s: %+v; want of payments, copied to eu1.payments (ID %s)", k, s, id)
		}
	}
	// The group's offsets land on eu1.payments, and on nothing else.
	checkTranslatedTo(t, e, "app", "payments", "eu1.payments", map[int32]int64{0: 1200, 1: 10, 2: 1502}, 1500)
	if got := groupOffsets(t, e.dstC, "app", "payments"); len(got) != 0 {
		t.Fatalf("group app got offsets of payments on the target: %v", got)
	}

	// The source grows: so does eu1.payments.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := e.srcC.Admin().CreatePartitions(ctx, "payments", 4); err != nil {
		t.Fatal(err)
	}
	produceRecords(t, e.srcC, "payments", 3, 0, 5)
	errOut, code = e.mirror(t, append(prefix, "--topics", "payments", "--exit-at-end")...)
	if code != 0 || !strings.Contains(errOut, "topic eu1.payments on the target (a copy of payments) grown from 3 to 4 partitions") {
		t.Fatalf("mirror after the source grew: exit %d, stderr %q", code, errOut)
	}
	checkPrefixCopy(4)

	// translate-offsets: with the policy, into eu1.payments; without,
	// there is no payments on the target.
	commitGroup(t, e.srcC, "app2", "payments", map[int32]int64{1: 700, 3: 2})
	out, errOut, code := e.translate(t, "app2")
	if code != 0 || !strings.Contains(errOut, "payments/1: no such partition on the target") || !strings.Contains(errOut, "nothing to commit") {
		t.Fatalf("translate-offsets without the policy: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	out, errOut, code = e.translate(t, append(prefix, "app2")...)
	if code != 0 || !strings.HasPrefix(out, "TOPIC         PARTITION  SOURCE  BEFORE  OFFSET\neu1.payments  1          700     -       ") {
		t.Fatalf("translate-offsets with the policy: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	checkTranslatedTo(t, e, "app2", "payments", "eu1.payments", map[int32]int64{1: 700}, 1501)
	checkTranslatedTo(t, e, "app2", "payments", "eu1.payments", map[int32]int64{3: 2}, 5)

	// Without offset syncs: the header scan finds the copies of payments
	// in eu1.payments (nothing repeated: exactly at the source offset).
	createTopic(t, e.srcC, client.TopicSpec{Name: "refunds", Partitions: 1, ReplicationFactor: 1, MinISR: 1})
	produceRecords(t, e.srcC, "refunds", 0, 0, 300)
	commitGroup(t, e.srcC, "app3", "refunds", map[int32]int64{0: 123})
	if errOut, code := e.mirror(t, append(prefix, "--topics", "refunds", "--exit-at-end", "--offset-syncs-topic", "")...); code != 0 {
		t.Fatalf("mirror refunds: exit %d, stderr %q", code, errOut)
	}
	out, errOut, code = e.translate(t, append(prefix, "app3")...)
	if code != 0 || !strings.Contains(errOut, "refunds/0 (eu1.refunds/0 on the target): no offset sync at or below source offset 123: translated to 123 by the mirror headers") ||
		!strings.Contains(out, "eu1.refunds  0          123     -       123") {
		t.Fatalf("translate-offsets by the headers: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if got := groupOffsets(t, e.dstC, "app3", "eu1.refunds"); got[0] != 123 {
		t.Fatalf("translate-offsets by the headers committed %v; want 123", got)
	}

	// A mirror moved from identity to prefix under the same --group: the
	// new copy starts at the group's offsets, and the mirror says so.
	createTopicN(t, e, "moved", 1)
	produceRecords(t, e.srcC, "moved", 0, 0, 10)
	if errOut, code := e.mirror(t, "--topics", "moved", "--exit-at-end"); code != 0 || strings.Contains(errOut, "warning") {
		t.Fatalf("mirror moved: exit %d, stderr %q", code, errOut)
	}
	produceRecords(t, e.srcC, "moved", 0, 10, 15)
	errOut, code = e.mirror(t, append(prefix, "--topics", "moved", "--exit-at-end")...)
	if code != 0 || !strings.Contains(errOut, "warning: the copy eu1.moved starts at group paymentlog-mirror's committed offsets of moved on the source (partition 0 at 10), "+
		"not at the source's beginning") {
		t.Fatalf("mirror moved to prefix: exit %d, stderr %q", code, errOut)
	}
	if got := readPartitions(t, e.dstC, "eu1.moved")[0]; len(got) != 5 {
		t.Fatalf("eu1.moved: %d records; want the 5 after the group's offset", len(got))
	}
}

// Two clusters mirror each other with the prefix policy and each other's
// aliases (eu1 and us1), by --topic-pattern '.*', several rounds with new
// records between them: each cluster's payments holds only its own
// records, and its copy of the other's (us1.payments on eu1, eu1.payments
// on us1) every record of the other's payments exactly once, in order;
// no other topic is created (no eu1.us1.payments: the copies are not
// mirrored back), and each mirror says it leaves them out.
func TestMirrorActiveActive(t *testing.T) {
	eu := startMirrorEnv(t)                                                  // eu1 to us1
	us := &mirrorEnv{src: eu.dst, dst: eu.src, srcC: eu.dstC, dstC: eu.srcC} // us1 to eu1
	for _, e := range []*mirrorEnv{eu, us} {
		createTopicN(t, e, "payments", 2)
	}
	mirror := func(e *mirrorEnv, alias, other string) string {
		t.Helper()
		errOut, code := e.mirror(t, "--replication-policy", "prefix", "--source-alias", alias, "--target-alias", other,
			"--topic-pattern", ".*", "--exit-at-end")
		if code != 0 {
			t.Fatalf("mirror %s to %s: exit %d, stderr %q", alias, other, code, errOut)
		}
		return errOut
	}
	var euOut, usOut string
	for round := range 3 {
		for p := range int32(2) {
			produceRecords(t, eu.srcC, "payments", p, round*10, round*10+10+int(p))
			produceRecords(t, us.srcC, "payments", p, round*20, round*20+5+int(p))
		}
		euOut += mirror(eu, "eu1", "us1")
		usOut += mirror(us, "us1", "eu1")
	}
	for _, c := range []struct {
		e            *mirrorEnv
		alias, other string
		out          string
	}{{eu, "eu1", "us1", euOut}, {us, "us1", "eu1", usOut}} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		topics, err := c.e.dstC.Admin().ListTopics(ctx)
		slices.Sort(topics)
		want := []string{c.alias + ".payments", defaultOffsetSyncsTopic, "payments"}
		if slices.Sort(want); err != nil || !slices.Equal(topics, want) {
			t.Fatalf("topics on %s: %v, %v; want %v", c.other, topics, err, want)
		}
		src, dst := readPartitions(t, c.e.srcC, "payments"), readPartitions(t, c.e.dstC, c.alias+".payments")
		for p := range src {
			for _, m := range src[p] {
				if hasHeader(m.Headers, mirrorHeader) {
					t.Fatalf("%s's payments/%d offset %d carries a mirror header: a copy in the local topic", c.alias, p, m.Offset)
				}
			}
			checkCopies(t, "payments", p, src[p], dst[p])
		}
		if !strings.Contains(c.out, "not mirroring topic "+c.other+".payments, which --topic-pattern matches: its name says it is a copy of a topic of the target (--target-alias "+c.other+")") ||
			!strings.Contains(c.out, "not mirroring topic "+defaultOffsetSyncsTopic+", which --topic-pattern matches") {
			t.Fatalf("mirror %s to %s: stderr %q", c.alias, c.other, c.out)
		}
	}

	// Both at once, records coming on both sides while they run: each
	// mirror's group is assigned the copies the other writes into its
	// source (and the syncs topic), and never fetches them.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 2)
	var outs [2]lockedBuffer
	var fetchedCopies, fetched [2]atomic.Int64 // polls fetching a topic not copied; any
	for i, c := range []struct {
		e            *mirrorEnv
		alias, other string
	}{{eu, "eu1", "us1"}, {us, "us1", "eu1"}} {
		opts := c.e.options()
		opts.topics, opts.pattern, opts.commitInterval = nil, ".*", 20*time.Millisecond
		opts.policy = replicationPolicy{prefix: true, sourceAlias: c.alias, separator: ".", targetAlias: c.other}
		opts.hooks.polled = func(fetching []client.TopicPartition) {
			fetched[i].Add(1)
			if slices.ContainsFunc(fetching, func(tp client.TopicPartition) bool { return !opts.mirrorMatches(tp.Topic) }) {
				fetchedCopies[i].Add(1)
			}
		}
		go func() { done <- runMirror(ctx, opts, &outs[i]) }()
	}
	for batch := range 3 {
		for p := range int32(2) {
			produceRecords(t, eu.srcC, "payments", p, 100+batch*10, 110+batch*10)
			produceRecords(t, us.srcC, "payments", p, 100+batch*10, 105+batch*10)
		}
		caughtUp := func(e *mirrorEnv, copy string) bool {
			var n int64
			for _, hw := range highWatermarks(t, e.srcC, "payments") {
				n += hw
			}
			return targetHolds(e.dstC, copy, 2, n)()
		}
		waitForCLI(t, "both copies to catch up", func() bool { return caughtUp(eu, "eu1.payments") && caughtUp(us, "us1.payments") })
	}
	// Each mirror's member owns its source's copy of the other's topic
	// (the pattern matches it) and the syncs topic; it never fetched them,
	// nor committed an offset of them.
	waitForCLI(t, "the copies owned", func() bool {
		for _, c := range []struct {
			src  *client.Client
			copy string
		}{{eu.srcC, "us1.payments"}, {us.srcC, "eu1.payments"}} {
			d, err := c.src.Admin().DescribeGroup(ctx, defaultMirrorGroup)
			if err != nil || len(d.Members) != 1 || !slices.ContainsFunc(d.Members[0].Owned, func(g wire.GroupPartitions) bool {
				return g.Topic == c.copy && len(g.Partitions) == 2
			}) {
				return false
			}
		}
		return true
	})
	cancel()
	for range 2 {
		if err := <-done; err != nil {
			t.Fatalf("mirror: %v; stderr %q %q", err, outs[0].String(), outs[1].String())
		}
	}
	for i, c := range []struct {
		src  *client.Client
		copy string
	}{{eu.srcC, "us1.payments"}, {us.srcC, "eu1.payments"}} {
		if n := fetchedCopies[i].Load(); n > 0 || fetched[i].Load() == 0 {
			t.Errorf("mirror %d fetched a topic it does not copy in %d of its %d polls; stderr %q", i, n, fetched[i].Load(), outs[i].String())
		}
		for _, topic := range []string{c.copy, defaultOffsetSyncsTopic} {
			if got := groupOffsets(t, c.src, defaultMirrorGroup, topic); len(got) > 0 {
				t.Errorf("the mirror's group committed offsets %v of %s, which it does not copy", got, topic)
			}
		}
		if !strings.Contains(outs[i].String(), "not mirroring topic "+c.copy+", which --topic-pattern matches") {
			t.Errorf("mirror %d: stderr %q", i, outs[i].String())
		}
	}
	for _, c := range []struct {
		e     *mirrorEnv
		alias string
	}{{eu, "eu1"}, {us, "us1"}} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		topics, err := c.e.dstC.Admin().ListTopics(ctx)
		slices.Sort(topics)
		want := []string{c.alias + ".payments", defaultOffsetSyncsTopic, "payments"}
		if slices.Sort(want); err != nil || !slices.Equal(topics, want) {
			t.Fatalf("topics after mirroring both ways at once: %v, %v; want %v", topics, err, want)
		}
		src, dst := readPartitions(t, c.e.srcC, "payments"), readPartitions(t, c.e.dstC, c.alias+".payments")
		for p := range src {
			checkCopies(t, "payments", p, src[p], dst[p])
		}
	}
}

// translateGroup with the prefix policy: the source group's offsets of t
// are committed as offsets of eu1.t; the target group's own offset of
// eu1.t past the translation is not moved back, and its offset of the
// target's local t (another topic) plays no part.
func TestTranslateGroupOntoTheCopy(t *testing.T) {
	policy := replicationPolicy{prefix: true, sourceAlias: "eu1", separator: "."}
	syncs := newSyncMap()
	for p := range int32(2) {
		syncs.add(offsetSync{tp: mirrorTP("t", p), source: 0, target: 0, topicID: "idcopy", dstTopic: "eu1.t"})
		syncs.add(offsetSync{tp: mirrorTP("t", p), source: 100, target: 150, topicID: "idcopy", dstTopic: "eu1.t"})
	}
	targets := map[client.TopicPartition]targetPartition{
		mirrorTP("t", 0): {topic: "eu1.t", topicID: "idcopy", logStart: 0, end: 1000},
		mirrorTP("t", 1): {topic: "eu1.t", topicID: "idcopy", logStart: 0, end: 1000},
	}
	source := []wire.GroupOffset{{Topic: "t", Partition: 0, Offset: 120}, {Topic: "t", Partition: 1, Offset: 120}}
	target := []wire.GroupOffset{{Topic: "eu1.t", Partition: 1, Offset: 900}, {Topic: "t", Partition: 0, Offset: 999}}
	plan := translateGroup(source, target, syncs, targets, policy, nil)
	if len(plan) != 2 || plan[0].dst != mirrorTP("eu1.t", 0) || plan[0].before != -1 || !plan[0].commits() || plan[0].target != 150 ||
		plan[1].before != 900 || plan[1].commits() || !strings.Contains(plan[1].note, "t/1 (eu1.t/1 on the target): the target group is at 900") {
		t.Fatalf("plan %+v", plan)
	}
	commits := groupCommits(plan)
	if len(commits) != 1 || commits[0].Topic != "eu1.t" || commits[0].Partition != 0 || commits[0].Offset != 150 || commits[0].TopicID != "idcopy" {
		t.Fatalf("commits %+v", commits)
	}
}
