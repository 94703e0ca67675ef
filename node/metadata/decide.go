package metadata

import (
	"fmt"
	"maps"
	"slices"

	"paymentlog/wire"
)

// The controller's decisions: pure functions from an image and an event to
// the records that carry them out (applied atomically as one entry). Errors
// are *wire.Error values the controller returns to the requester as is. Time
// does not enter here: session expiry is decided by the controller's session
// tracker, which turns it into a DecideFence.

// DefaultMinISR is the min ISR of a topic created without one (capped at RF).
const DefaultMinISR = 2

// DefaultProducerIDBlock is the size of a producer-id block.
const DefaultProducerIDBlock = 1000

func werr(code wire.ErrorCode, format string, args ...any) error {
	return &wire.Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// RegisterEvent is a broker registration.
type RegisterEvent struct {
	ID                 int32
	Addr               string
	Incarnation        int64
	ControllerEligible bool
	// NewStorage: the broker's data directory was new at this start (wiped
	// or replaced, or its first start): see dropRestartedReplica.
	NewStorage bool
	// UnsyncedLogs: the broker runs with --fsync interval or never, so a
	// restart may have cut its logs below what it reported as fetched.
	UnsyncedLogs bool
	// EmptyReplicas: partitions whose logs the broker does not hold from
	// before this start (a partition directory wiped while the data
	// directory was kept): NewStorage for these partitions only.
	EmptyReplicas []wire.PartitionRef
	// TornReplicas: partitions whose logs this start truncated a damaged
	// tail of: UnsyncedLogs for these partitions only.
	TornReplicas []wire.PartitionRef
	// MetadataVersion is the highest metadata version the broker's build
	// applies (0: version 1, a build from before versions existed).
	MetadataVersion int32
	// Rack is the broker's failure domain ("": none; racks.go).
	Rack string
}

// unsynced reports whether the registering broker's log of p may be
// shorter than what it reported fetched (UnsyncedLogs, or p among
// TornReplicas).
func (ev RegisterEvent) unsynced(p PartitionState) bool {
	return ev.UnsyncedLogs || slices.Contains(ev.TornReplicas, wire.PartitionRef{TopicID: p.TopicID, Partition: p.Partition})
}

// lostStorage reports whether the registering broker holds nothing of p
// from its earlier incarnations (NewStorage, or p among EmptyReplicas).
func (ev RegisterEvent) lostStorage(p PartitionState) bool {
	return ev.NewStorage || slices.Contains(ev.EmptyReplicas, wire.PartitionRef{TopicID: p.TopicID, Partition: p.Partition})
}

// DecideRegister registers a broker incarnation. The same incarnation again is
// a retry (no records). A new incarnation of a broker whose old incarnation is
// still unfenced first fences the old one (its leaderships move away and it
// leaves every ISR: the restarted process may have lost unflushed data). The
// new incarnation starts fenced until it has caught up (DecideHeartbeat).
// A new incarnation whose logs may be shorter than its previous one's
// (UnsyncedLogs, NewStorage; TornReplicas for those partitions) leaves
// every ELR, and one with new storage
// every ISR it is still named in (dropRestartedReplica); EmptyReplicas
// does both for the partitions it names.
//
// Incarnations grow with every process start of a broker (the node derives
// them from the clock and never reuses a smaller one on the same data
// directory), so an incarnation older than the registered one is a
// registration of a process that has been replaced: delayed in the network,
// or retried by a process that is exiting. It is refused with
// StaleBrokerEpoch and changes nothing; accepting it would fence the live
// process and register a dead one.
func DecideRegister(img *Image, ev RegisterEvent) ([]Record, error) {
	if ev.ID <= 0 {
		return nil, werr(wire.InvalidRequest, "broker id %d: must be > 0", ev.ID)
	}
	if ev.Addr == "" || len(ev.Addr) > 255 {
		return nil, werr(wire.InvalidRequest, "broker %d: address must be 1-255 bytes", ev.ID)
	}
	if why := CheckRack(ev.Rack); why != "" {
		return nil, werr(wire.InvalidRequest, "broker %d: %s", ev.ID, why)
	}
	var out []Record
	b, known := img.Broker(ev.ID)
	if known {
		if b.Incarnation == ev.Incarnation {
			if b.Addr != ev.Addr || b.ControllerEligible != ev.ControllerEligible || b.Rack != ev.Rack {
				return nil, werr(wire.InvalidRequest, "broker %d incarnation %d is registered at %s", ev.ID, ev.Incarnation, b.Addr)
			}
			return nil, nil
		}
		if ev.Incarnation < b.Incarnation {
			return nil, werr(wire.StaleBrokerEpoch, "broker %d incarnation %d is older than the registered %d",
				ev.ID, ev.Incarnation, b.Incarnation)
		}
		out = DecideFence(img, b.ID, b.Incarnation)
	}
	if v := versionOf(ev.MetadataVersion); v < img.metadataVersion {
		return nil, werr(wire.UnsupportedVersion, "broker %d runs a build that applies metadata version %d; the cluster uses version %d: upgrade it",
			ev.ID, v, img.metadataVersion)
	}
	out = append(out, BrokerRegistered{ID: ev.ID, Addr: ev.Addr, Incarnation: ev.Incarnation, MetadataVersion: ev.MetadataVersion,
		ControllerEligible: ev.ControllerEligible, Rack: ev.Rack})
	if known && (ev.NewStorage || ev.UnsyncedLogs || len(ev.EmptyReplicas) > 0 || len(ev.TornReplicas) > 0) {
		after, _, err := img.ApplyEntry(img.Offset(), out)
		if err != nil {
			panic(fmt.Sprintf("metadata: registration of a new incarnation rejected: %v", err))
		}
		out = append(out, dropRestartedReplica(after, ev.ID, after.Live, ev.unsynced, ev.lostStorage)...)
	}
	return out, nil
}

// DecideFence fences a broker incarnation (its session expired): it leaves
// every ISR and each partition it led gets a new leader from the remaining
// ISR, preferring assignment order, leader epoch bumped. A partition whose ISR
// would become empty goes offline (leader -1) and keeps its last ISR member,
// unless the topic enables unclean election. Nothing happens when the
// incarnation is not current or already fenced.
func DecideFence(img *Image, id int32, incarnation int64) []Record {
	return DecideFenceFavoring(img, id, incarnation, nil)
}

// DecideFenceFavoring is DecideFence where a partition whose leader changes
// takes the first remaining ISR member in assignment order that favored
// accepts, when there is one, instead of the first: the same ISR and ELR,
// only another of its members leads (all hold every record below the HW).
// The controller favors brokers that keep up with the metadata log: one
// that does not would not hear of its leadership for as long as it lags.
// A nil favored favors every broker.
func DecideFenceFavoring(img *Image, id int32, incarnation int64, favored func(int32) bool) []Record {
	b, ok := img.Broker(id)
	if !ok || b.Incarnation != incarnation || b.Fenced {
		return nil
	}
	out := []Record{BrokerFenced{ID: id, Incarnation: incarnation}}
	eligible := func(x int32) bool { return x != id && img.Live(x) }
	return append(out, removeFromPartitions(img, id, eligible, favored)...)
}

// HeartbeatEvent is a broker heartbeat.
type HeartbeatEvent struct {
	ID             int32
	Incarnation    int64
	MetadataOffset int64
	WantShutdown   bool
	// Favored, when set, is where a controlled shutdown moves each
	// leadership first: the first remaining ISR member in assignment
	// order it accepts (the controller's: brokers keeping up with the
	// metadata log, as for a fence, DecideFenceFavoring); failing one,
	// assignment order. Nil favors every broker.
	Favored func(int32) bool
}

// DecideHeartbeat reacts to a heartbeat (the session refresh itself is the
// controller's). An unknown or old incarnation gets StaleBrokerEpoch: the
// broker must register again.
//
//   - A fenced broker that reports a metadata offset at or past its
//     CatchUpOffset is unfenced, and every offline partition that can now
//     have a leader gets one (a returning last-ISR member leads again).
//   - WantShutdown on an unfenced broker is a controlled shutdown: it is
//     marked shutting down, its leaderships move to other live ISR members
//     (Favored ones first),
//     it leaves every ISR (a partition where it is the last member goes
//     offline keeping it), and it is fenced in the same entry, so the reply
//     can say ShutdownReady.
func DecideHeartbeat(img *Image, ev HeartbeatEvent) ([]Record, error) {
	b, ok := img.Broker(ev.ID)
	if !ok || b.Incarnation != ev.Incarnation {
		return nil, werr(wire.StaleBrokerEpoch, "broker %d incarnation %d is not registered", ev.ID, ev.Incarnation)
	}
	if ev.WantShutdown {
		if b.Fenced {
			return nil, nil
		}
		out := []Record{BrokerControlledShutdown{ID: b.ID, Incarnation: b.Incarnation}}
		eligible := func(x int32) bool { return x != b.ID && img.Live(x) }
		out = append(out, removeFromPartitions(img, b.ID, eligible, ev.Favored)...)
		return append(out, BrokerFenced{ID: b.ID, Incarnation: b.Incarnation}), nil
	}
	if !b.Fenced || b.ShuttingDown || ev.MetadataOffset < 0 || uint64(ev.MetadataOffset) < b.CatchUpOffset {
		return nil, nil
	}
	out := []Record{BrokerUnfenced{ID: b.ID, Incarnation: b.Incarnation}}
	after, _, err := img.ApplyEntry(img.Offset(), out)
	if err != nil {
		panic(fmt.Sprintf("metadata: unfence of a fenced current incarnation rejected: %v", err))
	}
	return append(out, electOffline(after, after.Live)...), nil
}

// HeartbeatResponse is the reply to a heartbeat as of img (after the
// decision's records were applied). ControllerID is left for the caller.
func HeartbeatResponse(img *Image, ev HeartbeatEvent) wire.BrokerHeartbeatResponse {
	b, ok := img.Broker(ev.ID)
	if !ok || b.Incarnation != ev.Incarnation {
		return wire.BrokerHeartbeatResponse{Err: wire.StaleBrokerEpoch, Fenced: true, ControllerID: -1,
			Message: fmt.Sprintf("broker %d incarnation %d is not registered", ev.ID, ev.Incarnation)}
	}
	return wire.BrokerHeartbeatResponse{Fenced: b.Fenced, ShutdownReady: ev.WantShutdown && img.LeaderCount(b.ID) == 0 && b.Fenced,
		ControllerID: -1}
}

// CreateTopicEvent is a topic creation. ID is the new topic id and Seed picks
// the round-robin start; the controller draws both at random.
type CreateTopicEvent struct {
	Name       string
	ID         string
	Partitions int32
	RF         int32
	MinISR     int32 // 0 = min(DefaultMinISR, RF)
	Configs    map[string]string
	Seed       uint64
}

// DecideCreateTopic validates a creation and assigns replicas over the live
// brokers (unfenced, not shutting down): round-robin from a seed-chosen start
// so preferred leaders (first replicas) spread evenly, the other replicas at a
// seed-chosen shift that grows every full round, never two replicas of a
// partition on one broker. RF above the live broker count is refused.
func DecideCreateTopic(img *Image, ev CreateTopicEvent) ([]Record, error) {
	if err := ValidateTopicName(ev.Name); err != nil {
		return nil, werr(wire.InvalidTopic, "%v", err)
	}
	if _, ok := img.Topic(ev.Name); ok {
		return nil, werr(wire.TopicAlreadyExists, "topic %q already exists", ev.Name)
	}
	if ev.Partitions < 1 || ev.Partitions > MaxPartitions {
		return nil, werr(wire.InvalidPartitions, "partition count %d: must be 1-%d", ev.Partitions, MaxPartitions)
	}
	if ev.RF < 1 || ev.RF > MaxReplicas {
		return nil, werr(wire.InvalidReplicationFactor, "replication factor %d: must be 1-%d", ev.RF, MaxReplicas)
	}
	if err := ValidateNewConfigs(ev.Configs); err != nil {
		return nil, werr(wire.InvalidConfig, "%v", err)
	}
	if compactsConfigs(ev.Configs) {
		if err := requireVersion(img, compactionVersion, "a compacted topic (cleanup.policy=compact)"); err != nil {
			return nil, err
		}
	}
	configs := ev.Configs
	minISR := ev.MinISR
	if v, ok := configs[ConfigMinInsyncReplicas]; ok {
		// The config key is another way to give the min ISR; it is stored
		// as the topic's MinISR, not among its configs.
		n, _ := parseMinISR(v) // validated above
		if minISR != 0 && minISR != n {
			return nil, werr(wire.InvalidConfig, "config %s=%s contradicts min in-sync replicas %d", ConfigMinInsyncReplicas, v, minISR)
		}
		minISR = n
		configs = maps.Clone(configs)
		delete(configs, ConfigMinInsyncReplicas)
	}
	if minISR == 0 {
		minISR = min(DefaultMinISR, ev.RF)
	}
	if minISR < 1 || minISR > ev.RF {
		return nil, werr(wire.InvalidRequest, "min in-sync replicas %d: must be 1-%d (the replication factor)", minISR, ev.RF)
	}
	if ev.ID == "" || len(ev.ID) > 64 {
		return nil, werr(wire.InvalidRequest, "topic id must be 1-64 bytes")
	}
	var live []int32
	for _, b := range img.Brokers() {
		if img.Live(b.ID) {
			live = append(live, b.ID)
		}
	}
	if int(ev.RF) > len(live) {
		return nil, werr(wire.InvalidReplicationFactor, "replication factor %d exceeds the %d available brokers", ev.RF, len(live))
	}
	assign := assignPartitions(img, live, nil, 0, int(ev.Partitions), int(ev.RF), ev.Seed)
	out := make([]Record, 0, 1+len(assign))
	out = append(out, TopicCreated{Name: ev.Name, ID: ev.ID, Partitions: ev.Partitions, RF: ev.RF,
		MinISR: minISR, Configs: configs})
	for p, reps := range assign {
		out = append(out, PartitionCreated{Topic: ev.Name, TopicID: ev.ID, Partition: int32(p),
			Replicas: reps, ISR: slices.Clone(reps), Leader: reps[0]})
	}
	return out, nil
}

// AssignReplicas assigns rf distinct brokers to each of n partitions
// (Kafka's rack-unaware assignment). brokers must be distinct and
// len(brokers) >= rf >= 1. Partition p's first replica is
// brokers[(start+p) % len]; follower j sits at a shift of
// 1 + (shift+j) % (len-1), where start and shift come from seed and shift
// grows by one after every len partitions.
func AssignReplicas(brokers []int32, n, rf int, seed uint64) [][]int32 {
	nb := len(brokers)
	if rf < 1 || rf > nb {
		panic(fmt.Sprintf("metadata: AssignReplicas rf %d with %d brokers", rf, nb))
	}
	start := int(seed % uint64(nb))
	shift := int((seed / uint64(nb)) % uint64(nb))
	return assignRange(brokers, 0, n, rf, start, shift)
}

// assignRange assigns partitions from..from+n-1 as AssignReplicas would
// assign them in a topic of at least from+n partitions placed with start and
// shift (the shift of partition p is shift + p/len(brokers)).
func assignRange(brokers []int32, from, n, rf, start, shift int) [][]int32 {
	nb := len(brokers)
	out := make([][]int32, n)
	for i := range n {
		p := from + i
		ps := shift + p/nb
		first := (p + start) % nb
		reps := make([]int32, 0, rf)
		reps = append(reps, brokers[first])
		for j := 0; j < rf-1; j++ {
			s := 1 + (ps+j)%(nb-1)
			reps = append(reps, brokers[(first+s)%nb])
		}
		out[i] = reps
	}
	return out
}

// DecideDeleteTopic deletes a topic.
func DecideDeleteTopic(img *Image, name string) ([]Record, error) {
	t, ok := img.Topic(name)
	if !ok {
		return nil, werr(wire.UnknownTopicOrPartition, "topic %q does not exist", name)
	}
	return []Record{TopicDeleted{Name: t.Name, ID: t.ID}}, nil
}

// DecideAlterPartition checks an ISR change asked by a partition leader. It
// is accepted only from the current incarnation of the current leader, for
// the current topic id, with the current leader epoch and partition epoch; the new ISR must be a subset
// of the replicas that contains the leader, and members it adds must be live
// and named in req.Members with their registered incarnation (KIP-903).
// The ISR is stored in assignment order; the partition epoch is bumped. A
// request whose ISR is already the current one succeeds with no records (a
// retry of a committed change).
func DecideAlterPartition(img *Image, req wire.AlterPartitionRequest) ([]Record, error) {
	b, ok := img.Broker(req.BrokerID)
	if !ok || b.Incarnation != req.Incarnation {
		return nil, werr(wire.StaleBrokerEpoch, "broker %d incarnation %d is not registered", req.BrokerID, req.Incarnation)
	}
	p, ok := img.Partition(req.Topic, req.Partition)
	if !ok {
		return nil, werr(wire.UnknownTopicOrPartition, "%s-%d does not exist", req.Topic, req.Partition)
	}
	if req.TopicID != p.TopicID {
		// The topic was deleted and re-created under the same name: its
		// epochs started again at 0 and may match the old ones, but the
		// leader judged the old topic's followers. Unknown ("") is refused
		// too: every broker sends the id.
		return nil, werr(wire.UnknownTopicOrPartition, "%s-%d has topic id %q, not %q",
			req.Topic, req.Partition, p.TopicID, req.TopicID)
	}
	if p.Leader != req.BrokerID {
		return nil, werr(wire.NotLeader, "%s-%d is led by %d, not %d", req.Topic, req.Partition, p.Leader, req.BrokerID)
	}
	switch {
	case req.LeaderEpoch < p.LeaderEpoch:
		return nil, werr(wire.FencedLeaderEpoch, "%s-%d leader epoch %d is older than %d", req.Topic, req.Partition, req.LeaderEpoch, p.LeaderEpoch)
	case req.LeaderEpoch > p.LeaderEpoch:
		return nil, werr(wire.UnknownLeaderEpoch, "%s-%d leader epoch %d is newer than %d", req.Topic, req.Partition, req.LeaderEpoch, p.LeaderEpoch)
	}
	isr, why := normalizeISR(p, req.NewISR)
	if why != "" {
		return nil, werr(wire.InvalidRequest, "%s-%d: %s", req.Topic, req.Partition, why)
	}
	if slices.Equal(isr, p.ISR) {
		return nil, nil
	}
	if req.PartitionEpoch != p.PartitionEpoch {
		return nil, werr(wire.InvalidUpdateVersion, "%s-%d partition epoch %d is not the current %d",
			req.Topic, req.Partition, req.PartitionEpoch, p.PartitionEpoch)
	}
	for _, r := range isr {
		if p.InISR(r) {
			continue
		}
		if !img.Live(r) {
			return nil, werr(wire.IneligibleReplica, "%s-%d: replica %d is fenced or shutting down", req.Topic, req.Partition, r)
		}
		// KIP-903: the leader judged r in sync on the fetches of one
		// process of r; if that is not the registered incarnation, r has
		// restarted since, maybe with a shorter log (fsync interval or
		// never), and must show it is in sync again. Unknown (0) is refused
		// too: every peer sends the incarnations.
		if b, _ := img.Broker(r); req.MemberIncarnation(r) != b.Incarnation {
			return nil, werr(wire.IneligibleReplica, "%s-%d: replica %d was judged in sync on incarnation %d, not the registered %d",
				req.Topic, req.Partition, r, req.MemberIncarnation(r), b.Incarnation)
		}
	}
	t, _ := img.Topic(p.Topic)
	if p.Reassigning() {
		// The change that brings the last target replica into the ISR
		// completes the reassignment (reassign.go).
		if c, ok := completeOnISR(img, p, isr); ok {
			return []Record{c}, nil
		}
	}
	c, _ := changeTo(p, isr, p.Leader, nextELR(p, isr, t.MinISR))
	return []Record{c}, nil
}

// normalizeISR checks a requested ISR against p and returns it in assignment
// order.
func normalizeISR(p PartitionState, isr []int32) ([]int32, string) {
	if len(isr) == 0 {
		return nil, "empty ISR"
	}
	for i, r := range isr {
		if !p.HasReplica(r) {
			return nil, fmt.Sprintf("ISR member %d is not a replica", r)
		}
		if slices.Contains(isr[:i], r) {
			return nil, fmt.Sprintf("ISR member %d listed twice", r)
		}
	}
	if !slices.Contains(isr, p.Leader) {
		return nil, fmt.Sprintf("ISR must contain the leader %d", p.Leader)
	}
	return inOrder(p.Replicas, isr), ""
}

// AlterPartitionResponse is the reply to req as of img.
func AlterPartitionResponse(img *Image, req wire.AlterPartitionRequest) wire.AlterPartitionResponse {
	p, ok := img.Partition(req.Topic, req.Partition)
	if !ok {
		return wire.AlterPartitionResponse{Err: wire.UnknownTopicOrPartition, ControllerID: -1}
	}
	return wire.AlterPartitionResponse{ISR: slices.Clone(p.ISR), LeaderEpoch: p.LeaderEpoch,
		PartitionEpoch: p.PartitionEpoch, ControllerID: -1}
}

// DecidePreferredLeaders moves leadership back to each partition's preferred
// replica where that replica is in the ISR and live but does not lead
// (PreferredWaiting), at once. The controller holds each move back a while
// (DecidePreferredLeadersIf, preferred.go).
func DecidePreferredLeaders(img *Image) []Record {
	return DecidePreferredLeadersIf(img, nil)
}

// DecideProducerIDs allocates the next n producer ids to a registered broker.
func DecideProducerIDs(img *Image, broker int32, n int64) ([]Record, error) {
	if _, ok := img.Broker(broker); !ok {
		return nil, werr(wire.StaleBrokerEpoch, "broker %d is not registered", broker)
	}
	if n <= 0 || n > MaxProducerIDBlock {
		return nil, werr(wire.InvalidRequest, "producer id block of %d: must be 1-%d", n, MaxProducerIDBlock)
	}
	if img.NextProducerID() > 1<<62 {
		return nil, werr(wire.Unknown, "producer ids exhausted")
	}
	return []Record{ProducerIDBlock{Broker: broker, Start: img.NextProducerID(), Len: n}}, nil
}
