package node_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/wire"
)

// The message configs through the client: a CreateTime topic with
// message.timestamp.before.max.ms refuses a record from a producer whose
// clock is a day behind (InvalidTimestamp, by name); a LogAppendTime topic
// gives records the leader's time, which the delivery reports and
// consumers and lookups by time see; with max.message.bytes the producer
// builds batches within it (every record written) and refuses, by name, a
// record too large alone.
func TestMessageConfigsThroughTheClient(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tc := mustStartClusterWith(t, 3, nil)
	tc.waitAlive(3)
	c := tc.client(ctx)
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "bounded", Partitions: 1, ReplicationFactor: 3, MinISR: 2,
		Configs: map[string]string{"message.timestamp.before.max.ms": "3600000"}})
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "appended", Partitions: 1, ReplicationFactor: 3, MinISR: 2,
		Configs: map[string]string{"message.timestamp.type": "LogAppendTime"}})
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "small", Partitions: 1, ReplicationFactor: 3, MinISR: 2,
		Configs: map[string]string{"max.message.bytes": "4096"}})
	p, err := c.NewProducer(client.ProducerConfig{Acks: client.AcksAll})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())

	dayAgo := time.Now().Add(-24 * time.Hour)
	_, err = p.ProduceSync(ctx, &client.Record{Topic: "bounded", Value: []byte("late"), Timestamp: dayAgo})
	if client.ErrorCode(err) != wire.InvalidTimestamp || !strings.Contains(err.Error(), "message.timestamp.before.max.ms=3600000") {
		t.Fatalf("a record a day old: %v, want InvalidTimestamp naming the config", err)
	}
	if d, err := p.ProduceSync(ctx, &client.Record{Topic: "bounded", Value: []byte("now")}); err != nil || d.Offset != 0 || !d.LogAppendTime.IsZero() {
		t.Fatalf("a record of now: %+v, %v", d, err)
	}

	before := time.Now()
	var ds []client.Delivery
	for i := range 3 {
		d, err := p.ProduceSync(ctx, &client.Record{Topic: "appended", Value: []byte(fmt.Sprint("p", i)), Timestamp: dayAgo})
		if err != nil {
			t.Fatal(err)
		}
		if d.LogAppendTime.Before(before.Truncate(time.Millisecond)) || d.LogAppendTime.After(time.Now()) {
			t.Fatalf("record %d: log append time %v, want between %v and now", i, d.LogAppendTime, before)
		}
		ds = append(ds, d)
	}
	got, err := consumeMessages(ctx, c, "appended", 3)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range got {
		if !m.Timestamp.Equal(ds[i].LogAppendTime) {
			t.Fatalf("offset %d: consumed timestamp %v, delivered log append time %v", m.Offset, m.Timestamp, ds[i].LogAppendTime)
		}
	}
	offs, err := c.Admin().ListOffsets(ctx, "appended", dayAgo.UnixMilli())
	if err != nil || offs[0] != 0 {
		t.Fatalf("offset for the producer's time: %v, %v; want 0 (every record is later)", offs, err)
	}
	offs, err = c.Admin().ListOffsets(ctx, "appended", ds[2].LogAppendTime.UnixMilli())
	if err != nil || offs[0] > 2 {
		t.Fatalf("offset for the last append time: %v, %v", offs, err)
	}

	produce200s(ctx, t, p, "small", "on a topic of 4096-byte batches")
	var tooLarge *client.RecordTooLargeError
	err = p.Produce(ctx, &client.Record{Topic: "small", Value: make([]byte, 4096)}, nil)
	if !errors.As(err, &tooLarge) || tooLarge.Topic != "small" || tooLarge.Max != 4096 || !strings.Contains(err.Error(), "max.message.bytes") {
		t.Fatalf("a record larger alone than max.message.bytes: %v", err)
	}
	if st := p.Stats(); st.Batches < 100*230/4096 {
		t.Fatalf("%d batches for 100 records of 200 bytes", st.Batches)
	}
}

// The cluster config log.message.timestamp.type=LogAppendTime reaches a
// topic that sets no type of its own, without a restart; a topic that sets
// CreateTime keeps the producer's times.
func TestClusterDefaultLogAppendTime(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tc := mustStartClusterWith(t, 3, nil)
	tc.waitAlive(3)
	c := tc.client(ctx)
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "plain", Partitions: 1, ReplicationFactor: 3, MinISR: 2})
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "own", Partitions: 1, ReplicationFactor: 3, MinISR: 2,
		Configs: map[string]string{"message.timestamp.type": "CreateTime"}})
	p, err := c.NewProducer(client.ProducerConfig{Acks: client.AcksAll})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	dayAgo := time.Now().Add(-24 * time.Hour).Truncate(time.Millisecond)
	if d, err := p.ProduceSync(ctx, &client.Record{Topic: "plain", Value: []byte("before"), Timestamp: dayAgo}); err != nil || !d.LogAppendTime.IsZero() {
		t.Fatalf("before the cluster config: %+v, %v", d, err)
	}
	if err := c.Admin().AlterClusterConfigs(ctx, client.ConfigChange{Set: map[string]string{"log.message.timestamp.type": "LogAppendTime"}}); err != nil {
		t.Fatal(err)
	}
	d, err := p.ProduceSync(ctx, &client.Record{Topic: "plain", Value: []byte("after"), Timestamp: dayAgo})
	if err != nil || d.LogAppendTime.Before(time.Now().Add(-time.Minute)) {
		t.Fatalf("after the cluster config: %+v, %v", d, err)
	}
	got, err := consumeMessages(ctx, c, "plain", 2)
	if err != nil || !got[0].Timestamp.Equal(dayAgo) || !got[1].Timestamp.Equal(d.LogAppendTime) || got[0].LogAppendTime || !got[1].LogAppendTime {
		t.Fatalf("consumed %v, %v; want the producer's time then the append time %v", got, err, d.LogAppendTime)
	}
	if d, err := p.ProduceSync(ctx, &client.Record{Topic: "own", Value: []byte("x"), Timestamp: dayAgo}); err != nil || !d.LogAppendTime.IsZero() {
		t.Fatalf("a topic with its own CreateTime: %+v, %v", d, err)
	}
}

// The cluster config message.max.bytes bounds the batches of every topic
// that sets no max.message.bytes: producers learn it from the metadata and
// build batches within it and refuse a record too large alone by name; a
// topic with its own larger limit takes larger records. (The leader's
// refusal naming the cluster config: broker.TestProduceMessagePolicy.)
func TestClusterMessageMaxBytes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tc := mustStartClusterWith(t, 3, nil)
	tc.waitAlive(3)
	c := tc.client(ctx)
	if err := c.Admin().AlterClusterConfigs(ctx, client.ConfigChange{Set: map[string]string{"message.max.bytes": "4096"}}); err != nil {
		t.Fatal(err)
	}
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "plain", Partitions: 1, ReplicationFactor: 3, MinISR: 2})
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "large", Partitions: 1, ReplicationFactor: 3, MinISR: 2,
		Configs: map[string]string{"max.message.bytes": "1048576"}})
	p, err := c.NewProducer(client.ProducerConfig{Acks: client.AcksAll})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	produce200s(ctx, t, p, "plain", "under a 4096-byte cluster limit")
	var tooLarge *client.RecordTooLargeError
	err = p.Produce(ctx, &client.Record{Topic: "plain", Value: make([]byte, 5000)}, nil)
	if !errors.As(err, &tooLarge) || tooLarge.Max != 4096 || !strings.Contains(err.Error(), "message.max.bytes") {
		t.Fatalf("a 5000-byte record under the cluster limit: %v", err)
	}
	if _, err := p.ProduceSync(ctx, &client.Record{Topic: "large", Value: make([]byte, 5000)}); err != nil {
		t.Fatalf("a 5000-byte record on a topic with its own 1 MiB limit: %v", err)
	}
}

// produce200s produces 100 records of 200 bytes to topic and fails the
// test unless every one is acknowledged (what says under which limit).
func produce200s(ctx context.Context, t *testing.T, p *client.Producer, topic, what string) {
	t.Helper()
	value := []byte(strings.Repeat("v", 200))
	done := make(chan error, 100)
	for range 100 {
		if err := p.Produce(ctx, &client.Record{Topic: topic, Value: value}, func(d client.Delivery) { done <- d.Err }); err != nil {
			t.Fatal(err)
		}
	}
	for range 100 {
		if err := <-done; err != nil {
			t.Fatalf("a 200-byte record %s: %v", what, err)
		}
	}
}

// consumeMessages reads n records of partition 0 of topic from the beginning.
func consumeMessages(ctx context.Context, c *client.Client, topic string, n int) ([]client.Message, error) {
	cons := c.NewConsumer(client.ConsumerConfig{MaxWait: 100 * time.Millisecond})
	defer cons.Close()
	cons.Assign([]client.TopicPartition{{Topic: topic, Partition: 0}}, client.SeekBeginning)
	var out []client.Message
	for len(out) < n {
		msgs, err := cons.Poll(ctx)
		if err != nil {
			return out, err
		}
		out = append(out, msgs...)
	}
	return out, nil
}
