package client

// AssignNewPartitions assigns the partitions of topic that the cached
// metadata lists and the consumer does not have yet, each starting at from
// (an offset, SeekBeginning or SeekEnd), and returns them in partition
// order. A consumer that follows every partition of a topic calls it
// between polls to pick up partitions added to the topic (CreatePartitions)
// while it runs: it never blocks, and starts a background metadata refresh
// when the cached metadata is older than the client's MetadataMaxAge, so
// added partitions are found within that interval (or at once when the
// metadata is refreshed for another reason). A partition of a topic
// re-created with fewer partitions is not removed.
func (cs *Consumer) AssignNewPartitions(topic string, from int64) []TopicPartition {
	cs.c.meta.refreshIfOlder(cs.c.cfg.MetadataMaxAge)
	snap := cs.c.meta.current()
	if snap == nil {
		return nil
	}
	t, ok := snap.topics[topic]
	if !ok {
		return nil
	}
	var added []TopicPartition
	for _, p := range t.Partitions {
		tp := TopicPartition{Topic: topic, Partition: p.Partition}
		if _, have := cs.parts[tp]; !have {
			added = append(added, tp)
		}
	}
	if len(added) > 0 {
		cs.Assign(added, from)
	}
	return added
}
