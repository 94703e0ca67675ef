package metadata

import (
	"slices"

	"paymentlog/wire"
)

// Adding partitions to a topic (Kafka's CreatePartitions). The new
// partitions are PartitionCreated records, one per partition in index
// order, in one entry; no record type of their own. A PartitionCreated
// applies only as the topic's next partition (Partition == the current
// count) of the topic id it names, and an entry applies whole or not at
// all, so an entry decided on a stale image (a deposed controller's, or a
// retried request decided twice before the first commit was seen) never
// adds partitions twice: its first record is out of order and the whole
// entry is rejected, identically on every node. The image and snapshots
// carry the partitions like any other; the topic's id and its existing
// partitions do not change.

// CreatePartitionsEvent raises a topic's partition count to Count. Seed
// places the new partitions where the topic's own placement cannot be
// continued (see DecideCreatePartitions); the controller draws it at random.
type CreatePartitionsEvent struct {
	Name  string
	Count int32
	Seed  uint64
}

// DecideCreatePartitions validates an increase of a topic's partition count
// and assigns the new partitions over the live brokers (unfenced, not
// shutting down), with the topic's replication factor, leader = the first
// replica, ISR = every replica, epochs 0 — as DecideCreateTopic does.
//
// Placement continues the topic's own round-robin: the start and the
// follower shift are read back from partition 0 (its first replica's index
// among the live brokers, and its second replica's distance from it), so
// when the live brokers are those the topic was created on, the topic ends
// up placed exactly as if it had been created with Count partitions
// (preferred leaders keep rotating over the brokers). Whatever partition 0
// cannot tell (its replicas are no longer live, or the topic has one
// replica per partition) comes from Seed, as for a new topic.
//
// Refused: an unknown topic (UnknownTopicOrPartition); Count below the
// current count, equal to it, or above MaxPartitions (InvalidPartitions);
// fewer live brokers than the replication factor (InvalidReplicationFactor).
func DecideCreatePartitions(img *Image, ev CreatePartitionsEvent) ([]Record, error) {
	t, ok := img.Topic(ev.Name)
	if !ok {
		return nil, werr(wire.UnknownTopicOrPartition, "topic %q does not exist", ev.Name)
	}
	cur := int32(len(t.Partitions))
	switch {
	case ev.Count == cur:
		return nil, werr(wire.InvalidPartitions, "topic %q already has %d partitions", ev.Name, cur)
	case ev.Count < cur:
		return nil, werr(wire.InvalidPartitions, "topic %q has %d partitions; the count can only grow, not shrink to %d",
			ev.Name, cur, ev.Count)
	case ev.Count > MaxPartitions:
		return nil, werr(wire.InvalidPartitions, "partition count %d: must be 1-%d", ev.Count, MaxPartitions)
	}
	var live []int32
	for _, b := range img.Brokers() {
		if img.Live(b.ID) {
			live = append(live, b.ID)
		}
	}
	if int(t.RF) > len(live) {
		return nil, werr(wire.InvalidReplicationFactor, "replication factor %d exceeds the %d available brokers", t.RF, len(live))
	}
	existing := make([][]int32, 0, cur)
	for _, p := range t.Partitions {
		existing = append(existing, p.Replicas)
	}
	assign := assignPartitions(img, live, existing, int(cur), int(ev.Count-cur), int(t.RF), ev.Seed)
	out := make([]Record, 0, len(assign))
	for i, reps := range assign {
		out = append(out, PartitionCreated{Topic: t.Name, TopicID: t.ID, Partition: cur + int32(i),
			Replicas: reps, ISR: slices.Clone(reps), Leader: reps[0]})
	}
	return out, nil
}

// continuePlacement returns the start and shift (see assignRange) that
// placed a partition 0 with replicas first over brokers, or those seed
// gives (as in AssignReplicas) for what first does not tell.
func continuePlacement(brokers, first []int32, seed uint64) (start, shift int) {
	nb := len(brokers)
	start = int(seed % uint64(nb))
	shift = int((seed / uint64(nb)) % uint64(nb))
	if len(first) == 0 {
		return start, shift
	}
	s0 := slices.Index(brokers, first[0])
	if s0 < 0 {
		return start, shift
	}
	start = s0
	if len(first) < 2 || nb < 2 {
		return start, shift
	}
	if i1 := slices.Index(brokers, first[1]); i1 >= 0 {
		// Partition 0's first follower sits at 1 + shift%(nb-1) from its
		// leader; only shift mod nb-1 matters.
		d := (i1 - s0 + nb) % nb
		shift = (d - 1 + (nb - 1)) % (nb - 1)
	}
	return start, shift
}
