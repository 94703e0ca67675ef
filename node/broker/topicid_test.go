package broker

import (
	"fmt"
	"testing"
	"time"

	"paymentlog/wire"
)

// TestTopicRecreatedWhileNodeDown: a topic is deleted and re-created under
// the same name while a replica's node is down. When the node comes back,
// the directory it finds holds the old topic's records and HW: the new
// topic's replica must start empty, not serve (or keep, as a follower,
// below the epochs it shares with the new leader) the old records.
func TestTopicRecreatedWhileNodeDown(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 1, maxWait: 20 * time.Millisecond})
	c.createPartition("payments", 0, []int32{1}, 1, 1)
	if r := mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{"old-0", "old-1"})); r.Err != wire.None {
		t.Fatalf("produce: %+v", r)
	}
	dir := c.node(1).dir
	c.stopNode(1)
	// Deleted and re-created meanwhile: a new topic id, epochs from 1 again.
	c.mu.Lock()
	c.parts[testKey].TopicID = "id-payments-recreated"
	c.mu.Unlock()
	c.startNode(1, dir)
	c.push(testKey)
	hw, start, leo, ok := c.node(1).b.PartitionInfo(testKey.topic, testKey.partition)
	if !ok || hw != 0 || start != 0 || leo != 0 {
		t.Fatalf("re-created topic's replica: hw %d, log [%d, %d) (open %v); want an empty log", hw, start, leo, ok)
	}
	if r := mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{"new-0"})); r.Err != wire.None || r.BaseOffset != 0 {
		t.Fatalf("produce: %+v", r)
	}
	got := readAll(t, c.node(1).b.partition(testKey.topic, testKey.partition).log, 1)
	if fmt.Sprint(got) != fmt.Sprint(map[int64]string{0: "new-0"}) {
		t.Fatalf("log %v", got)
	}
	// Restarting with the same topic keeps the data.
	c.stopNode(1)
	c.startNode(1, dir)
	c.push(testKey)
	if hw, _, leo, _ := c.node(1).b.PartitionInfo(testKey.topic, testKey.partition); hw != 1 || leo != 1 {
		t.Fatalf("after a restart: hw %d, leo %d; want 1, 1", hw, leo)
	}
}
