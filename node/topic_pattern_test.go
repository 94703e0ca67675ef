package node_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/node"
)

// A member subscribed with a topic pattern, on a real cluster: the active
// controller resolves it against the metadata image at each heartbeat, so
// a matching topic created later is assigned at the next one, and a topic
// whose name only contains a match is not.
func TestTopicPatternMemberOnTheController(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tc := mustStartClusterWith(t, 3, func(cfg *node.Config) {
		cfg.GroupHeartbeatInterval = 100 * time.Millisecond
	})
	tc.waitAlive(3)
	c := tc.client(ctx)
	for _, name := range []string{"payments-eu", "xpayments-eu"} {
		createTopic(ctx, t, tc, c, client.TopicSpec{Name: name, Partitions: 1, ReplicationFactor: 3, MinISR: 2})
	}
	g, err := c.NewGroupConsumer(ctx, client.GroupConsumerConfig{Group: "billing", TopicPattern: "payments-.*",
		Consumer: client.ConsumerConfig{MaxWait: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(ctx)
	has := func(want ...string) func() bool {
		return func() bool {
			if _, err := g.Poll(ctx); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, tp := range g.Assignment() {
				got = append(got, tp.Topic)
			}
			return slices.Equal(got, want)
		}
	}
	waitFor(t, "the member to read payments-eu only", 15*time.Second, has("payments-eu"))
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "payments-us", Partitions: 1, ReplicationFactor: 3, MinISR: 2})
	waitFor(t, "the member to read payments-us too", 15*time.Second, has("payments-eu", "payments-us"))
}
