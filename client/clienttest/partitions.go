package clienttest

import (
	"fmt"

	"paymentlog/wire"
)

// AddPartitions raises a topic's partition count to count (as a committed
// CreatePartitions would), leaders spread round-robin as CreateTopic spreads
// them; the metadata offset moves on.
func (c *Cluster) AddPartitions(name string, count int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.addPartitionsLocked(c.mu.topics[name], int32(count))
}

func (c *Cluster) addPartitionsLocked(t *topic, count int32) {
	n := int32(len(c.mu.brokers))
	for p := int32(len(t.parts)); p < count; p++ {
		var reps []int32
		for r := int32(0); r < min(t.rf, n); r++ {
			reps = append(reps, c.mu.brokers[(p+r)%n].ID)
		}
		t.parts = append(t.parts, &partition{leader: reps[0], replicas: reps, producers: map[int64]*producerState{}})
	}
	c.mu.moff++
	c.wakeLocked()
}

// createPartitions answers a CreatePartitionsRequest as the controller
// does: only on the controller, the count only grows.
func (c *Cluster) createPartitions(addr string, r *wire.CreatePartitionsRequest) *wire.CreatePartitionsResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.brokerAt(addr) != c.mu.controller {
		return &wire.CreatePartitionsResponse{Err: wire.NotController, ControllerID: c.mu.controller}
	}
	t, ok := c.mu.topics[r.Name]
	if !ok {
		return &wire.CreatePartitionsResponse{Err: wire.UnknownTopicOrPartition, Message: fmt.Sprintf("topic %q does not exist", r.Name)}
	}
	cur := int32(len(t.parts))
	if r.Count <= cur {
		msg := fmt.Sprintf("topic %q already has %d partitions", r.Name, cur)
		if r.Count < cur {
			msg = fmt.Sprintf("topic %q has %d partitions; the count can only grow, not shrink to %d", r.Name, cur, r.Count)
		}
		return &wire.CreatePartitionsResponse{Err: wire.InvalidPartitions, Message: msg, TopicID: t.id, Count: cur}
	}
	c.addPartitionsLocked(t, r.Count)
	return &wire.CreatePartitionsResponse{TopicID: t.id, Count: r.Count, ControllerID: c.mu.controller, MetadataOffset: c.mu.moff}
}
