package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"paymentlog/client"
	"paymentlog/wire"
)

// ensureSyncTopic creates the offset syncs topic on the target unless it
// exists: one partition (the syncs are few, and read whole), compacted
// (offset_syncs.go), replicated as the target allows (up to 3, min ISR up
// to 2).
func ensureSyncTopic(ctx context.Context, a *client.Admin, name string, brokers int32) error {
	rf := min(3, max(brokers, 1))
	_, err := a.CreateTopic(ctx, client.TopicSpec{Name: name, Partitions: 1, ReplicationFactor: rf, MinISR: min(2, rf),
		Configs: map[string]string{"cleanup.policy": "compact", "min.compaction.lag.ms": offsetSyncCompactionLag}})
	if err != nil && client.ErrorCode(err) != wire.TopicAlreadyExists {
		return fmt.Errorf("create the offset syncs topic %s on the target: %w", name, err)
	}
	return nil
}

// syncReader reads the offset syncs topic into a syncMap, from the
// beginning, then on from where it left off at each catchUp.
type syncReader struct {
	c     *client.Client
	topic string
	cons  *client.Consumer // nil until the topic is found
	tps   []client.TopicPartition
	syncs *syncMap
	// bad counts records that are not syncs (skipped).
	bad int
	// legacy counts syncs without a target topic ID (an earlier build's):
	// ignored, since they may be of an incarnation of the topic since
	// deleted (mirror_offset_syncs.go).
	legacy int
}

func newSyncReader(c *client.Client, topic string) *syncReader {
	return &syncReader{c: c, topic: topic, syncs: newSyncMap()}
}

// catchUp reads the syncs written up to the topic's current end.
func (r *syncReader) catchUp(ctx context.Context) error {
	if r.cons == nil {
		n, err := r.c.PartitionCount(ctx, r.topic)
		if err != nil {
			return fmt.Errorf("offset syncs topic %s on the target: %w", r.topic, err)
		}
		r.cons = r.c.NewConsumer(client.ConsumerConfig{MaxWait: 20 * time.Millisecond})
		for p := range int32(n) {
			r.tps = append(r.tps, client.TopicPartition{Topic: r.topic, Partition: p})
		}
		r.cons.Assign(r.tps, client.SeekBeginning)
	}
	ends, err := r.cons.EndOffsets(ctx, r.tps)
	if err != nil {
		return fmt.Errorf("offset syncs topic %s on the target: %w", r.topic, err)
	}
	for !r.reached(ends) {
		msgs, err := r.cons.Poll(ctx)
		if err != nil {
			return fmt.Errorf("read offset syncs topic %s on the target: %w", r.topic, err)
		}
		for _, m := range msgs {
			s, err := parseOffsetSync(m.Value)
			switch {
			case err != nil:
				r.bad++
			case s.topicID == "":
				r.legacy++
			default:
				r.syncs.add(s)
			}
		}
	}
	return nil
}

func (r *syncReader) reached(ends map[client.TopicPartition]int64) bool {
	for _, tp := range r.tps {
		if pos, ok := r.cons.Position(tp); !ok || pos < ends[tp] {
			return false
		}
	}
	return true
}

// report says on stderr how many records it left out, if any.
func (r *syncReader) report(stderr io.Writer) {
	if r.bad > 0 {
		fmt.Fprintf(stderr, "%d records of %s are not offset syncs: left out\n", r.bad, r.topic)
	}
	if r.legacy > 0 {
		fmt.Fprintf(stderr, "%d offset syncs of %s name no target topic ID (written by an earlier build; the topic may have been recreated since): ignored\n",
			r.legacy, r.topic)
	}
}

func (r *syncReader) close() {
	if r.cons != nil {
		r.cons.Close()
	}
}
