package broker

// clientPartition is the replica that serves a client's produce, fetch,
// ListOffsets, DeleteRecords, DescribeProducers or DescribeReplica for a
// partition, and a group lag's batch timestamp (BatchTimestampAt): nil if
// this node has none, or none of the topic its metadata image holds
// (currentTopic). Replica-to-replica paths (follower fetch sessions,
// TornAtOpen) look partitions up by name and check the topic id
// themselves.
func (b *Broker) clientPartition(topic string, partition int32) *partition {
	p := b.partition(topic, partition)
	if p == nil || !b.currentTopic(p) {
		return nil
	}
	return p
}

// currentTopic reports whether p belongs to the topic incarnation the
// node's metadata image holds (Config.CurrentTopicID; true without it).
//
// A topic deleted, or deleted and re-created under its name, leaves its
// replica open here from the moment the image changes until the node's
// reconcile stops it: a produce served by it then is acknowledged (acks=all
// included: its HW moves) for records that go with the deleted topic's
// data, though the client may already have seen the new topic (CreateTopic
// returns once every node's image has it) and produce to it; a consumer
// would read the deleted topic's records and HW as the new topic's.
// Refused instead, with UnknownTopicOrPartition, which producers and
// consumers retry until the new topic's replica is open. The image only
// moves forward and a replica's topic id is fixed, so a replica found stale
// stays stale; one the image still names may be served.
func (b *Broker) currentTopic(p *partition) bool {
	if b.cfg.CurrentTopicID == nil {
		return true
	}
	id, ok := b.cfg.CurrentTopicID(p.key.topic, p.key.partition)
	if !ok {
		return false
	}
	own := p.topicID()
	return id == "" || own == "" || id == own
}
