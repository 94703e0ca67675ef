package client

import (
	"context"
	"fmt"

	"paymentlog/wire"
)

// CreatePartitions raises a topic's partition count to count through the
// active controller (Kafka's CreatePartitions) and waits until every node
// that answers sees at least count partitions, each with a leader, and its
// broker has taken them (as CreateTopic). The
// count never shrinks: a count below the current one, or equal to it, is
// refused with an error matching wire.InvalidPartitions (see ErrorCode),
// an unknown topic with wire.UnknownTopicOrPartition, fewer live brokers
// than the topic's replication factor with wire.InvalidReplicationFactor.
//
// When an earlier attempt of this call failed in transit or timed out, it
// may have added the partitions: the controller then refuses the retry
// ("already has N partitions", with N in the answer), and when N is count
// the call succeeds. Keyed records move: producers put a key on
// hash(key) % count, so most keys land on another partition from then on.
func (a *Admin) CreatePartitions(ctx context.Context, topic string, count int32) error {
	if count < 1 {
		return wire.InvalidPartitions.Err(fmt.Sprintf("partition count %d: must be at least 1", count))
	}
	req := &wire.CreatePartitionsRequest{Name: topic, Count: count}
	var resp wire.CreatePartitionsResponse
	unsure, err := a.toController(ctx, "create partitions", wire.TypeCreatePartitions, req,
		func() any { resp = wire.CreatePartitionsResponse{}; return &resp },
		func() (wire.ErrorCode, string) { return resp.Err, resp.Message })
	if err != nil && !(unsure && resp.Err == wire.InvalidPartitions && resp.Count == count) {
		return err
	}
	err = a.waitTopic(ctx, topic, func(t *wire.TopicMetadata) bool {
		return t != nil && len(t.Partitions) >= int(count) && allLed(t)
	})
	if err != nil {
		return fmt.Errorf("client: topic %q has %d partitions but they are not all ready: %w", topic, count, err)
	}
	if err := a.waitBrokersTook(ctx, resp.MetadataOffset); err != nil {
		return fmt.Errorf("client: topic %q has %d partitions but not every node has taken the new ones yet: %w", topic, count, err)
	}
	return nil
}
