package client

import (
	"context"
	"fmt"
	"maps"
	"strconv"

	"paymentlog/wire"
)

// ConfigChange is a change of one topic's configs: Set keys are set, Delete
// keys return to their defaults. "min.insync.replicas" changes the topic's
// min ISR (1..replication factor). An unknown key is refused whole with an
// error matching wire.InvalidConfig that names it.
type ConfigChange struct {
	Set    map[string]string
	Delete []string
}

// AlterTopicConfigs changes a topic's configs through the active controller
// and waits until every node that answers shows the result (a config key it
// deleted absent, one it set with its value, the new min ISR) and its broker
// has applied it (DescribeCluster's BrokerOffset), so a describe or produce
// that follows sees it. A missing topic yields an error matching
// wire.UnknownTopicOrPartition.
func (a *Admin) AlterTopicConfigs(ctx context.Context, topic string, ch ConfigChange) error {
	req := &wire.AlterConfigsRequest{Topic: topic, Set: ch.Set, Delete: ch.Delete}
	var resp wire.AlterConfigsResponse
	_, err := a.toController(ctx, "alter topic configs", wire.TypeAlterConfigs, req,
		func() any { resp = wire.AlterConfigsResponse{}; return &resp },
		func() (wire.ErrorCode, string) { return resp.Err, resp.Message })
	if err != nil {
		return err
	}
	err = a.waitTopic(ctx, topic, func(t *wire.TopicMetadata) bool { return t != nil && shows(t, ch) })
	if err != nil {
		return fmt.Errorf("client: topic %q: configs changed but not yet seen by every node: %w", topic, err)
	}
	// The leaders' brokers apply the new configs (retention, the message
	// policy) a moment after their images show them. An older controller
	// sends no offset to wait for.
	if resp.MetadataOffset > 0 {
		if err := a.waitOffset(ctx, resp.MetadataOffset, true); err != nil {
			return fmt.Errorf("client: topic %q: configs changed but not yet applied by every node: %w", topic, err)
		}
	}
	return nil
}

// shows reports whether t reflects the change ch (min ISR by value when set;
// a deleted min ISR is not checked, its default depends on the RF).
func shows(t *wire.TopicMetadata, ch ConfigChange) bool {
	for k, v := range ch.Set {
		if k == "min.insync.replicas" {
			if strconv.Itoa(int(t.MinISR)) != v {
				return false
			}
			continue
		}
		if t.Configs[k] != v {
			return false
		}
	}
	for _, k := range ch.Delete {
		if _, ok := t.Configs[k]; ok {
			return false
		}
	}
	return true
}

// topicConfigs copies a topic's configs for a description (never nil).
func topicConfigs(t *wire.TopicMetadata) map[string]string {
	if t.Configs == nil {
		return map[string]string{}
	}
	return maps.Clone(t.Configs)
}
