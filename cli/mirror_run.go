package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"paymentlog/client"
	"paymentlog/segment"
	"paymentlog/wire"
)

// mirrorDrainTimeout bounds the wait for the target to acknowledge the
// records in flight before a commit (a hand-over, the periodic one, the
// one at exit): past it the commit stops below the records still
// unacknowledged, and they are mirrored again by the next owner.
const mirrorDrainTimeout = 5 * time.Second

// runMirror copies the topics opts names from the source cluster to the
// target until interrupted (exit 0), --exit-at-end, or a failure.
//
// Order of operations: connect to both clusters; make every target topic
// fit its source topic (topicSyncer), refusing before anything is copied;
// start the target's producer and join the source group; then poll,
// forward each record, and commit what the target acknowledged every
// --commit-interval. At the end (ctx's end, --exit-at-end, a failure) the
// member's Close waits for the records in flight (up to
// mirrorDrainTimeout), commits below the first one not acknowledged, and
// leaves the group; then the producer closes.
func runMirror(ctx context.Context, opts mirrorOptions, stderr io.Writer) (err error) {
	src, err := opts.source.newClient(ctx, stderr)
	if err != nil {
		return fmt.Errorf("mirror: source cluster: %w", err)
	}
	defer closeClient(src)
	dst, err := opts.target.newClient(ctx, stderr)
	if err != nil {
		return fmt.Errorf("mirror: target cluster: %w", err)
	}
	defer closeClient(dst)

	m := &mirror{opts: opts, ctx: ctx, stderr: stderr, track: newInflight(opts.offsetSyncsTopic != ""),
		goals: map[client.TopicPartition]int64{}, committed: map[client.TopicPartition]int64{}, passed: map[string]bool{}, lastTick: time.Now()}
	m.topics = &topicSyncer{src: src.Admin(), dst: dst.Admin(), fitted: map[string]int32{}, policy: opts.policy, syncsTopic: opts.offsetSyncsTopic, group: opts.group,
		defaults: topicDefaults{replicationFactor: opts.replicationFactor, minISR: opts.minISR},
		report:   func(format string, args ...any) { fmt.Fprintf(stderr, "paymentlog: mirror: "+format+"\n", args...) }}
	setupCtx, cancel := context.WithTimeout(ctx, defaultAdminTimeout)
	defer cancel()
	if err := m.syncTopics(setupCtx, src); err != nil {
		return fmt.Errorf("mirror: %w", err)
	}
	if opts.offsetSyncsTopic != "" {
		err := ensureSyncTopic(setupCtx, dst.Admin(), opts.offsetSyncsTopic, m.topics.defaults.brokers)
		switch {
		case err != nil && opts.syncsGroups():
			return fmt.Errorf("mirror: %w", err)
		case err != nil:
			// Copying goes on without (a target on an older build, or
			// no ACL for the topic): only the translation needs them.
			fmt.Fprintf(stderr, "paymentlog: mirror: writing no offset syncs (groups' offsets of what this run copies cannot be translated): %v\n", err)
			m.opts.offsetSyncsTopic, m.track = "", newInflight(false)
		}
	}
	if opts.syncsGroups() {
		m.groups = &groupSyncer{src: src.Admin(), dst: dst.Admin(), names: opts.syncGroups, own: opts.group, policy: opts.policy,
			reader: newSyncReader(dst, opts.offsetSyncsTopic), active: map[string]bool{}, report: m.topics.report}
		if opts.syncGroupPattern != "" {
			m.groups.pattern, _ = wire.TopicPatternRegexp(opts.syncGroupPattern) // checked by parseMirrorOptions
		}
		defer m.groups.reader.close()
	}
	m.prod, err = dst.NewProducer(client.ProducerConfig{
		// acks=all and idempotence: a retried batch is never written
		// twice, and the producer resends a partition's failed batches in
		// sequence order before sending later ones, so up to
		// MaxInFlightIdempotent requests in flight keep the order.
		Acks: client.AcksAll, MaxInFlight: client.MaxInFlightIdempotent,
		// Whatever the source took: the target topic's own limit
		// (max.message.bytes, copied) is the one that applies.
		MaxRecordBytes: 15 << 20,
	})
	if err != nil {
		return fmt.Errorf("mirror: %w", err)
	}
	gcfg := client.GroupConsumerConfig{Group: opts.group, Topics: opts.topics, TopicPattern: opts.pattern, From: client.SeekBeginning,
		Consumer: client.ConsumerConfig{OnOffsetReset: func(tp client.TopicPartition, from, to int64) {
			fmt.Fprintf(stderr, "paymentlog: mirror: %s: offsets %d to %d were deleted by retention on the source before they were mirrored; going on from %d\n",
				tp, from, to-1, to)
		}},
		CommitAt: m.commitAt, OnAssigned: m.assigned, OnRevoked: m.revoked, Skip: m.skip,
		OnCommitError: func(tps []client.TopicPartition, err error) {
			fmt.Fprintf(stderr, "paymentlog: mirror: commit of %s, handed to another mirror process, failed (it mirrors them again from the last commit): %v\n",
				partitionNames(tps), err)
		}}
	if m.member, err = src.NewGroupConsumer(setupCtx, gcfg); err != nil {
		_ = m.prod.Close(context.WithoutCancel(ctx))
		return fmt.Errorf("mirror: %w", err)
	}
	defer func() { err = m.close(err) }()
	return m.run(ctx)
}

// mirror is one run of `paymentlog mirror`. Its fields are used by the
// poll loop's goroutine (the GroupConsumer calls the hooks from Poll,
// Commit and Close); track is shared with the producer's callbacks.
type mirror struct {
	opts   mirrorOptions
	ctx    context.Context // the command's, for the hooks' requests
	stderr io.Writer
	member *client.GroupConsumer
	prod   *client.Producer
	topics *topicSyncer
	track  *inflight
	// groups syncs consumer groups' offsets to the target; nil without
	// --sync-group-offsets.
	groups *groupSyncer
	// syncFailed: writing an offset sync failed (said once).
	syncFailed atomic.Bool
	// goals are, with --exit-at-end, each partition's source high
	// watermark when this process started it.
	goals map[client.TopicPartition]int64
	// committed is, by partition, the offset last committed (or that
	// CommitAt last gave), else where the partition started: the lag.
	committed map[client.TopicPartition]int64
	// err is a failure met in a hook (a target topic refused, a goal
	// not read), for the loop to stop the run with.
	err error
	// dirty: records were produced since the last complete flush.
	dirty bool
	// crashed: a test hook stopped the run as a kill would: nothing
	// more is committed.
	crashed bool
	// passed are the topics assigned by --topic-pattern that the mirror
	// does not copy (mirrorMatches), never fetched (skip); each is said
	// once.
	passed    map[string]bool
	forwarded int
	lastTick  time.Time
}

// syncTopics makes every target topic of a source topic the mirror copies
// fit it, before the first record is copied: so a refusal stops the run
// at once. Topics the group assigns later (created on the source, or
// grown) are synced when they are (assigned).
func (m *mirror) syncTopics(ctx context.Context, src *client.Client) error {
	st, err := m.topics.dst.DescribeCluster(ctx)
	if err != nil {
		return fmt.Errorf("target cluster: %w", err)
	}
	m.topics.defaults.brokers = int32(st.Alive())
	topics := m.opts.topics
	if m.opts.pattern != "" {
		all, err := src.Admin().ListTopics(ctx)
		if err != nil {
			return fmt.Errorf("list the source's topics: %w", err)
		}
		topics = slices.DeleteFunc(all, func(t string) bool { return !m.opts.mirrorMatches(t) })
	}
	for _, t := range topics {
		if err := m.topics.sync(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

// run polls and forwards until ctx ends (nil), --exit-at-end is reached
// (nil), a test crash, or a failure.
func (m *mirror) run(ctx context.Context) error {
	for {
		if err := m.failure(); err != nil {
			return err
		}
		if m.crashed || (m.opts.exitAtEnd && m.atEnd()) {
			return nil
		}
		m.tick(ctx)
		msgs, err := m.member.Poll(ctx)
		if h := m.opts.hooks.polled; h != nil {
			h(m.member.Consumer().Assignment())
		}
		if ctx.Err() != nil {
			m.notForwarded(msgs)
			return nil
		}
		if err != nil {
			return fmt.Errorf("mirror: %w", err)
		}
		if err := m.failure(); err != nil {
			m.notForwarded(msgs)
			return err
		}
		if err := m.forward(ctx, msgs); err != nil {
			return err
		}
		m.writeSyncs(ctx, false)
	}
}

// writeSyncs hands the offset syncs decided to the producer (with flush,
// each partition's latest too: partSyncs.flush), each naming the target
// topic's ID this run learned (topicSyncer.ids). A sync not written is
// said once, and does not stop the run: the map is only sparser.
func (m *mirror) writeSyncs(ctx context.Context, flush bool) {
	if m.opts.offsetSyncsTopic == "" || m.crashed {
		return
	}
	for _, s := range m.track.takeSyncs(flush) {
		s.dstTopic = m.opts.policy.targetTopic(s.tp.Topic)
		if s.topicID = m.topics.ids[s.tp.Topic]; s.topicID == "" {
			// Fitted before anything was copied; an ID is missing only
			// from a target whose metadata has none.
			m.syncWriteFailed(fmt.Errorf("the target gave no topic ID for %s", s.tp.Topic))
			continue
		}
		rec := &client.Record{Topic: m.opts.offsetSyncsTopic, Partition: 0, PartitionSet: true, Key: s.key(), Value: s.value()}
		m.dirty = true
		err := m.prod.Produce(ctx, rec, func(d client.Delivery) {
			if d.Err != nil {
				m.syncWriteFailed(d.Err)
			}
		})
		if err != nil {
			m.syncWriteFailed(err)
			return
		}
	}
}

func (m *mirror) syncWriteFailed(err error) {
	if m.syncFailed.CompareAndSwap(false, true) {
		fmt.Fprintf(m.stderr, "paymentlog: mirror: writing an offset sync to %s on the target failed (groups' offsets translate from the syncs written): %v\n",
			m.opts.offsetSyncsTopic, err)
	}
}

// syncGroups runs a round of --sync-group-offsets for the partitions
// owned.
func (m *mirror) syncGroups(ctx context.Context, owned []client.TopicPartition) {
	if m.groups == nil || m.crashed {
		return
	}
	gctx, cancel := context.WithTimeout(ctx, defaultAdminTimeout)
	defer cancel()
	m.groups.sync(gctx, owned)
}

// failure is the first failure that stops the run: one met in a hook, or
// a record the target did not acknowledge.
func (m *mirror) failure() error {
	if m.err != nil {
		return m.err
	}
	if err := m.track.failure(); err != nil {
		return fmt.Errorf("mirror: %w", err)
	}
	return nil
}

// forward hands msgs to the target's producer, in order.
func (m *mirror) forward(ctx context.Context, msgs []client.Message) error {
	for i := range msgs {
		if ctx.Err() != nil { // interrupted: stop at once, commit what was handed over
			m.notForwarded(msgs[i:])
			return nil
		}
		msg := &msgs[i]
		if m.opts.skipMirrored && hasHeader(msg.Headers, mirrorHeader) {
			continue // done: the commit passes it with the records around it
		}
		tp, off := client.TopicPartition{Topic: msg.Topic, Partition: msg.Partition}, msg.Offset
		rec := mirrorRecord(msg, m.opts.policy.targetTopic(msg.Topic), m.opts.sourceHeader)
		size := client.RecordBytes(rec)
		m.track.sent(tp, off)
		m.dirty = true
		err := m.prod.Produce(ctx, rec, func(d client.Delivery) {
			if d.Err != nil {
				d.Err = fmt.Errorf("%s offset %d: not acknowledged by the target: %w", tp, off, d.Err)
			}
			m.track.delivered(tp, off, d.Offset, size, d.Err)
		})
		if err != nil {
			m.notForwarded(msgs[i:])
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("mirror: %s offset %d: %w", tp, off, err)
		}
		m.forwarded++
		if h := m.opts.hooks.afterForward; h != nil && h(m.forwarded) {
			m.crashed = true
			m.notForwarded(msgs[i+1:])
			return nil
		}
	}
	return nil
}

// notForwarded records that msgs, returned by Poll, were not handed over:
// no commit of this run reaches them.
func (m *mirror) notForwarded(msgs []client.Message) {
	for i := range msgs {
		m.track.notSent(client.TopicPartition{Topic: msgs[i].Topic, Partition: msgs[i].Partition}, msgs[i].Offset)
	}
}

// mirrorRecord is the target's copy of msg, for topic (the replication
// policy's name for msg's): same partition, key, value (nil stays a
// tombstone), headers and timestamp; with header, the mirrorHeader naming
// msg's source position (its source topic) replaces any it had.
func mirrorRecord(msg *client.Message, topic string, header bool) *client.Record {
	rec := &client.Record{Topic: topic, Partition: msg.Partition, PartitionSet: true,
		Key: msg.Key, Value: msg.Value, Headers: msg.Headers, Timestamp: msg.Timestamp}
	if header {
		hs := make([]segment.RecordHeader, 0, len(msg.Headers)+1)
		for _, h := range msg.Headers {
			if h.Key != mirrorHeader {
				hs = append(hs, h)
			}
		}
		rec.Headers = append(hs, segment.RecordHeader{Key: mirrorHeader, Value: sourcePosition(msg.Topic, msg.Partition, msg.Offset)})
	}
	return rec
}

// sourcePosition is mirrorHeader's value: "topic/partition/offset".
func sourcePosition(topic string, partition int32, offset int64) []byte {
	b := append([]byte(topic), '/')
	b = strconv.AppendInt(b, int64(partition), 10)
	b = append(b, '/')
	return strconv.AppendInt(b, offset, 10)
}

func hasHeader(hs []segment.RecordHeader, key string) bool {
	return slices.ContainsFunc(hs, func(h segment.RecordHeader) bool { return h.Key == key })
}

// drain waits (up to mirrorDrainTimeout) for the target to acknowledge
// every record handed over, so that a commit covers them; on a timeout it
// says so, and the commit stops below the records in flight.
func (m *mirror) drain() {
	if !m.dirty {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(m.ctx), mirrorDrainTimeout)
	defer cancel()
	if err := m.prod.Flush(ctx); err != nil {
		fmt.Fprintf(m.stderr, "paymentlog: mirror: the target has not acknowledged %d records after %v; committing below them\n",
			m.prod.Outstanding(), mirrorDrainTimeout)
		return
	}
	m.dirty = false
}

// commitAt is what the member commits for tp at position
// (client.GroupConsumerConfig.CommitAt): after the records in flight are
// acknowledged (drain), the first offset the target has not acknowledged.
func (m *mirror) commitAt(tp client.TopicPartition, position int64) (int64, bool) {
	if m.crashed {
		return 0, false
	}
	m.drain()
	c := m.track.commitPoint(tp, position)
	if c < 0 {
		return 0, false
	}
	m.committed[tp] = c
	return c, true
}

// assigned makes the target topics of partitions the member just started
// fit (a topic or partitions added on the source), and reads their
// --exit-at-end goals (client.GroupConsumerConfig.OnAssigned). A failure
// stops the run before their records are forwarded.
func (m *mirror) assigned(tps []client.TopicPartition) {
	if m.err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(m.ctx, defaultAdminTimeout)
	defer cancel()
	cons := m.member.Consumer()
	if err := m.topics.ensure(ctx, tps); err != nil {
		m.err = fmt.Errorf("mirror: %w", err)
		return
	}
	for _, tp := range tps {
		if pos, ok := cons.Position(tp); ok && pos >= 0 {
			m.committed[tp] = pos
		}
	}
	if !m.opts.exitAtEnd {
		return
	}
	ends, err := cons.EndOffsets(ctx, tps)
	if err != nil {
		m.err = fmt.Errorf("mirror: end offsets on the source: %w", err)
		return
	}
	for _, tp := range tps {
		m.goals[tp] = ends[tp]
	}
}

// skip reports whether tp, assigned, is of a topic the mirror does not
// copy (client.GroupConsumerConfig.Skip), saying so once for each topic:
// the member owns it, and never fetches nor commits it. --topic-pattern
// subscribes the group to every matching topic (the controller resolves
// it, and cannot leave out what mirrorMatches does).
func (m *mirror) skip(tp client.TopicPartition) bool {
	if m.opts.mirrorMatches(tp.Topic) {
		return false
	}
	if !m.passed[tp.Topic] {
		m.passed[tp.Topic] = true
		why := "the mirror's own offset syncs topic or an internal one"
		if m.opts.policy.isCycle(tp.Topic) {
			why = fmt.Sprintf("its name says it is a copy of a topic of the target (--target-alias %s)", m.opts.policy.targetAlias)
		}
		fmt.Fprintf(m.stderr, "paymentlog: mirror: not mirroring topic %s, which --topic-pattern matches: %s\n", tp.Topic, why)
	}
	return true
}

// mirrored are the partitions of tps the mirror copies (the member owns
// those skip left out too).
func (m *mirror) mirrored(tps []client.TopicPartition) []client.TopicPartition {
	return slices.DeleteFunc(tps, func(tp client.TopicPartition) bool { return !m.opts.mirrorMatches(tp.Topic) })
}

// revoked forgets partitions handed to another member, committed already
// (client.GroupConsumerConfig.OnRevoked). The records in flight were
// awaited by that commit; after a lost membership (no commit) they are
// awaited here, before the group hears the partitions are released.
func (m *mirror) revoked(tps []client.TopicPartition) {
	m.drain()
	m.track.forget(tps)
	for _, tp := range tps {
		delete(m.goals, tp) // committed stays, for the progress line at exit
	}
}

// atEnd: the member owns at least one partition, the group gives it
// nothing else, and each it copies is read up to its goal (the records in flight are
// awaited by the commit at exit).
func (m *mirror) atEnd() bool {
	if !m.member.Stable() {
		return false
	}
	tps := m.member.Assignment()
	for _, tp := range m.mirrored(slices.Clone(tps)) {
		pos, ok := m.member.Consumer().Position(tp)
		goal, known := m.goals[tp]
		if !ok || !known || pos < 0 || pos < goal {
			return false
		}
	}
	return len(tps) > 0
}

// tick commits and prints the progress line once --commit-interval has
// passed since the last time. A failed commit is reported; the next
// retries.
func (m *mirror) tick(ctx context.Context) {
	if m.opts.commitInterval <= 0 || time.Since(m.lastTick) < m.opts.commitInterval {
		return
	}
	m.lastTick = time.Now()
	cctx, cancel := context.WithTimeout(ctx, groupCommitTimeout)
	defer cancel()
	if err := m.member.Commit(cctx); err != nil && ctx.Err() == nil {
		fmt.Fprintf(m.stderr, "paymentlog: mirror: commit offsets of group %s on the source: %v\n", m.opts.group, err)
	}
	m.writeSyncs(ctx, true)
	m.syncGroups(ctx, m.mirrored(m.member.Assignment()))
	m.progress(m.highWatermarks())
}

// highWatermarks are the source high watermarks of the partitions the
// member owns, as its fetches last reported them (-1: none yet).
func (m *mirror) highWatermarks() map[client.TopicPartition]int64 {
	hws := map[client.TopicPartition]int64{}
	for _, tp := range m.mirrored(m.member.Assignment()) {
		hws[tp] = m.member.Consumer().HighWatermark(tp)
	}
	return hws
}

// progress prints one line: records and bytes the target acknowledged,
// partitions owned (those of hws), and the largest lag, a source high
// watermark minus the group's committed offset.
func (m *mirror) progress(hws map[client.TopicPartition]int64) {
	records, bytes := m.track.totals()
	var lag int64
	for tp, hw := range hws {
		if c, ok := m.committed[tp]; ok && hw >= 0 {
			lag = max(lag, hw-c)
		}
	}
	fmt.Fprintf(m.stderr, "paymentlog: mirror: %d records (%s) mirrored, %d partitions owned, max lag %d\n",
		records, humanBytes(bytes), len(hws), lag)
}

// close ends the run that ended with err: the member commits (after the
// records in flight, see commitAt) and leaves, the producer closes, and
// the progress line is printed. It returns err, else the first failure
// met meanwhile.
func (m *mirror) close(err error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(m.ctx), groupCommitTimeout+mirrorDrainTimeout)
	defer cancel()
	hws := m.highWatermarks()
	owned := m.mirrored(m.member.Assignment())
	// After a test crash Close commits nothing (commitAt); it leaves the
	// group all the same, so that a rerun need not wait a session timeout.
	cerr := m.member.Close(ctx)
	if cerr != nil {
		cerr = fmt.Errorf("mirror: commit offsets of group %s on the source at exit: %w", m.opts.group, cerr)
	}
	if err == nil && cerr == nil && m.failure() == nil {
		// The last syncs, written, then the groups synced by them.
		m.writeSyncs(ctx, true)
		if m.groups != nil && m.prod.Flush(ctx) == nil {
			m.syncGroups(ctx, owned)
		}
	}
	perr := m.prod.Close(ctx)
	m.progress(hws)
	switch {
	case err != nil:
		return err
	case m.failure() != nil:
		return m.failure()
	case cerr != nil:
		return cerr
	case perr != nil:
		return fmt.Errorf("mirror: records still unacknowledged by the target at exit: %w", perr)
	}
	return nil
}

// partitionNames is "a/0, b/2".
func partitionNames(tps []client.TopicPartition) string {
	s := ""
	for i, tp := range tps {
		if i > 0 {
			s += ", "
		}
		s += tp.String()
	}
	return s
}
