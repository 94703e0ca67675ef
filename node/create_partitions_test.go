package node_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/wire"
)

// keyedWriter produces keyed records "payment-<i>" (key "k<i>") in rounds
// of roundSize, each round flushed before the next, and keeps every
// record's outcome.
type keyedWriter struct {
	t    *testing.T
	p    *client.Producer
	mu   sync.Mutex
	outs []keyedOutcome
	// perPart counts acknowledged records by partition.
	perPart map[int32]int
}

type keyedOutcome struct {
	key, value string
	partition  int32
	offset     int64
	err        error
	done       bool
}

const roundSize = 40

// round produces one round and waits for its outcomes.
func (w *keyedWriter) round(ctx context.Context) error {
	w.mu.Lock()
	first := len(w.outs)
	for range roundSize {
		w.outs = append(w.outs, keyedOutcome{})
	}
	w.mu.Unlock()
	for i := first; i < first+roundSize; i++ {
		k, v := fmt.Sprintf("k%d", i), fmt.Sprintf("payment-%d", i)
		err := w.p.Produce(ctx, &client.Record{Topic: "payments", Key: []byte(k), Value: []byte(v)}, func(d client.Delivery) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.outs[i] = keyedOutcome{key: k, value: v, partition: d.Partition, offset: d.Offset, err: d.Err, done: true}
			if d.Err == nil {
				w.perPart[d.Partition]++
			}
		})
		if err != nil {
			return err
		}
	}
	return w.p.Flush(ctx)
}

func (w *keyedWriter) acked(p int32) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.perPart[p]
}

// TestAddPartitionsEndToEnd: a topic of 2 partitions grows to 5 while a
// producer keeps running; the producer writes to the new partitions within
// its metadata max age without a restart, keyed records going to
// hash(key) % the count it knew; a new partition's leader is killed and the
// partition fails over; everything acknowledged reads back once, at its
// offset; the killed node comes back with the new partitions and rejoins
// their ISRs.
func TestAddPartitionsEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tc := MustStartCluster(t, 3)
	tc.waitAlive(3)
	c, err := client.New(ctx, client.Config{Bootstrap: tc.bootstrap(), Logger: testLogger(t), MetadataMaxAge: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "payments", Partitions: 2, ReplicationFactor: 3, MinISR: 2})
	topicBefore, _ := tc.node(tc.activeController()).Store().Image().Topic("payments")

	p, err := c.NewProducer(client.ProducerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	w := &keyedWriter{t: t, p: p, perPart: map[int32]int{}}

	// Rounds run in the background from here to the end; the test waits on
	// what they acknowledge.
	stop := make(chan struct{})
	roundsDone := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				roundsDone <- nil
				return
			default:
			}
			if err := w.round(ctx); err != nil {
				roundsDone <- err
				return
			}
		}
	}()
	waitFor(t, "records in both partitions", 15*time.Second, func() bool { return w.acked(0) > 0 && w.acked(1) > 0 })

	admin := c.Admin()
	for {
		err := admin.CreatePartitions(ctx, "payments", 5)
		if err == nil {
			break
		}
		var we *wire.Error
		if !errors.As(err, &we) || we.Code != wire.InvalidReplicationFactor || ctx.Err() != nil {
			t.Fatalf("add partitions: %v", err)
		}
		// A stall on a loaded machine fenced a broker for a moment (see createTopic).
		tc.waitAlive(3)
	}
	topicAfter, _ := tc.node(tc.activeController()).Store().Image().Topic("payments")
	if topicAfter.ID != topicBefore.ID || len(topicAfter.Partitions) != 5 {
		t.Fatalf("after adding: id %s (was %s), %d partitions", topicAfter.ID, topicBefore.ID, len(topicAfter.Partitions))
	}
	if err := admin.CreatePartitions(ctx, "payments", 5); client.ErrorCode(err) != wire.InvalidPartitions {
		t.Fatalf("adding again: %v, want InvalidPartitions", err)
	}
	waitFor(t, "the running producer writes to every new partition", 15*time.Second, func() bool {
		return w.acked(2) > 0 && w.acked(3) > 0 && w.acked(4) > 0
	})
	// The producer knows 5 partitions for every record queued from here on.
	w.mu.Lock()
	switched := len(w.outs)
	w.mu.Unlock()

	// Kill the leader of a new partition (not the active controller when
	// another choice exists, to time the partition's failover alone).
	ctrl := tc.activeController()
	victimPart, victim := int32(2), waitLeader(t, tc, "payments", 2)
	for part := int32(2); part < 5; part++ {
		if l := waitLeader(t, tc, "payments", part); l != ctrl {
			victimPart, victim = part, l
			break
		}
	}
	before := w.acked(victimPart)
	tc.kill(victim)
	waitFor(t, fmt.Sprintf("payments-%d to fail over from %d", victimPart, victim), 15*time.Second, func() bool {
		a := tc.activeController()
		if a == 0 {
			return false
		}
		pt, ok := tc.node(a).Store().Image().Partition("payments", victimPart)
		return ok && pt.Leader > 0 && pt.Leader != victim
	})
	waitFor(t, fmt.Sprintf("records acknowledged by payments-%d's new leader", victimPart), 20*time.Second, func() bool {
		return w.acked(victimPart) > before+roundSize/5
	})
	close(stop)
	if err := <-roundsDone; err != nil {
		t.Fatalf("producing: %v", err)
	}

	// Every record acknowledged, at hash(key) % the count the producer
	// knew, and read back once at its offset.
	want := map[[2]int64]string{}
	w.mu.Lock()
	outs := append([]keyedOutcome(nil), w.outs...)
	w.mu.Unlock()
	for i, o := range outs {
		if !o.done || o.err != nil {
			t.Fatalf("record %d: done %t err %v", i, o.done, o.err)
		}
		key := []byte(o.key)
		if (i >= switched && client.KeyPartition(key, 5) != o.partition) ||
			(client.KeyPartition(key, 2) != o.partition && client.KeyPartition(key, 5) != o.partition) {
			t.Fatalf("record %d (%s) in partition %d: hash %% 2 is %d, hash %% 5 is %d (the producer knew 5 from record %d on)",
				i, o.key, o.partition, client.KeyPartition(key, 2), client.KeyPartition(key, 5), switched)
		}
		k := [2]int64{int64(o.partition), o.offset}
		if prev, dup := want[k]; dup {
			t.Fatalf("payments-%d offset %d acknowledged for %s and %s", o.partition, o.offset, prev, o.value)
		}
		want[k] = o.value
	}
	cons := c.NewConsumer(client.ConsumerConfig{MaxWait: 100 * time.Millisecond})
	defer cons.Close()
	tps, err := cons.AssignTopic(ctx, "payments", 0)
	if err != nil || len(tps) != 5 {
		t.Fatalf("assign: %v %v", tps, err)
	}
	seen := map[[2]int64]string{}
	values := map[string]bool{}
	for len(seen) < len(want) {
		msgs, err := cons.Poll(ctx)
		if err != nil {
			t.Fatalf("poll after %d of %d records: %v", len(seen), len(want), err)
		}
		for _, m := range msgs {
			k := [2]int64{int64(m.Partition), m.Offset}
			if values[string(m.Value)] {
				t.Fatalf("%s read twice (again at payments-%d offset %d)", m.Value, m.Partition, m.Offset)
			}
			values[string(m.Value)] = true
			seen[k] = string(m.Value)
		}
	}
	for k, v := range want {
		if seen[k] != v {
			t.Fatalf("payments-%d offset %d holds %q, acknowledged %q", k[0], k[1], seen[k], v)
		}
	}
	t.Logf("%d records over 5 partitions; payments-%d failed over from node %d", len(want), victimPart, victim)

	// The killed node restarts with the new partitions (from its metadata
	// log) and rejoins every ISR of the topic by replicating them.
	n := tc.start(victim)
	waitFor(t, fmt.Sprintf("node %d back in every ISR of payments", victim), 30*time.Second, func() bool {
		a := tc.activeController()
		if a == 0 {
			return false
		}
		tp, ok := tc.node(a).Store().Image().Topic("payments")
		if !ok || len(tp.Partitions) != 5 {
			return false
		}
		for _, pt := range tp.Partitions {
			if !pt.InISR(victim) {
				return false
			}
		}
		return true
	})
	if tp, _ := n.Store().Image().Topic("payments"); len(tp.Partitions) != 5 || tp.ID != topicBefore.ID {
		t.Fatalf("restarted node's image: %d partitions, id %s", len(tp.Partitions), tp.ID)
	}
	for part := int32(0); part < 5; part++ {
		if _, _, leo, ok := n.Broker().PartitionInfo("payments", part); !ok || leo == 0 {
			t.Errorf("restarted node %d: payments-%d open=%t leo=%d", victim, part, ok, leo)
		}
	}
}

// TestAddPartitionsAcrossControllerKill: the active controller is killed as
// soon as it has committed new partitions, before or after its answer left
// (whichever comes first decides which path the client takes: the answer,
// or a retry at the next controller that finds the partitions in place).
// Either way the call succeeds, every node ends with the partitions exactly
// once under the same topic id, and they take records.
func TestAddPartitionsAcrossControllerKill(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tc := MustStartCluster(t, 3)
	tc.waitAlive(3)
	c := tc.client(ctx)
	// Replication factor 2: two nodes are left after the kill.
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "payments", Partitions: 2, ReplicationFactor: 2, MinISR: 1})
	ctrl := tc.activeController()
	before, _ := tc.node(ctrl).Store().Image().Topic("payments")
	done := make(chan error, 1)
	go func() { done <- c.Admin().CreatePartitions(ctx, "payments", 4) }()
	var err error
	returned := false
	waitFor(t, "the partitions committed on the controller, or the call's end", 15*time.Second, func() bool {
		select {
		case err = <-done:
			returned = true
			return true
		default:
		}
		tp, _ := tc.node(ctrl).Store().Image().Topic("payments")
		return len(tp.Partitions) == 4
	})
	tc.kill(ctrl)
	if !returned {
		err = <-done
	}
	if err != nil {
		t.Fatalf("add partitions with the controller killed (returned before the kill: %t): %v", returned, err)
	}
	t.Logf("the call returned before the kill: %t", returned)
	waitFor(t, "every node with 4 partitions", 15*time.Second, func() bool {
		for _, n := range tc.running() {
			tp, ok := n.Store().Image().Topic("payments")
			if !ok || len(tp.Partitions) != 4 || tp.ID != before.ID {
				return false
			}
		}
		return tc.converged()
	})
	for part := int32(2); part < 4; part++ {
		d, err := c.NewProducer(client.ProducerConfig{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.ProduceSync(ctx, &client.Record{Topic: "payments", Partition: part, PartitionSet: true, Value: []byte("x")}); err != nil {
			t.Fatalf("produce to new partition %d after the controller kill: %v", part, err)
		}
		d.Close(ctx)
	}
}
