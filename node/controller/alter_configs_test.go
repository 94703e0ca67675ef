package controller

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"paymentlog/node/metadata"
	"paymentlog/node/metadata/scripttest"
	"paymentlog/wire"
)

// alterConfigs runs the script command "configs topic=T set=k=v,k=v del=k,k".
func (h *harness) alterConfigs(ctx context.Context, c scripttest.Cmd) string {
	req := wire.AlterConfigsRequest{Topic: c.Args["topic"]}
	if s := c.Args["set"]; s != "" {
		req.Set = map[string]string{}
		for _, kv := range strings.Split(s, ",") {
			k, v, _ := strings.Cut(kv, "=")
			req.Set[k] = v
		}
	}
	if s := c.Args["del"]; s != "" {
		req.Delete = strings.Split(s, ",")
	}
	r := h.c.AlterConfigs(ctx, req)
	return fmt.Sprintf("configs: err=%v msg=%q ctrl=%d", r.Err, r.Message, r.ControllerID)
}

// TestAlterConfigsConcurrent: concurrent changes of different keys of one
// topic all take effect (each is decided on the image that includes the
// ones before it, and the record is a delta).
func TestAlterConfigsConcurrent(t *testing.T) {
	h := newHarness(t)
	h.raft.setLeader(1, 1)
	h.tick()
	ctx := h.ctx()
	for id := int32(1); id <= 3; id++ {
		h.c.Register(ctx, wire.BrokerRegisterRequest{BrokerID: id, Addr: "a:1", Incarnation: 1, ControllerEligible: true})
		h.c.Heartbeat(ctx, wire.BrokerHeartbeatRequest{BrokerID: id, Incarnation: 1, MetadataOffset: int64(h.store.Image().Offset())})
	}
	if r := h.c.CreateTopic(ctx, wire.CreateTopicRequest{Name: "t", Partitions: 1, ReplicationFactor: 3}); r.Err != wire.None {
		t.Fatalf("create: %+v", r)
	}
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := []string{metadata.ConfigRetentionMs, metadata.ConfigRetentionBytes}[i]
			if r := h.c.AlterConfigs(ctx, wire.AlterConfigsRequest{Topic: "t", Set: map[string]string{key: strconv.Itoa(1000 + i)}}); r.Err != wire.None {
				t.Errorf("alter %s: %+v", key, r)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if r := h.c.AlterConfigs(ctx, wire.AlterConfigsRequest{Topic: "t", Set: map[string]string{metadata.ConfigMinInsyncReplicas: "3"}}); r.Err != wire.None {
			t.Errorf("alter min ISR: %+v", r)
		}
	}()
	wg.Wait()
	tp, _ := h.store.Image().Topic("t")
	if tp.Configs[metadata.ConfigRetentionMs] != "1000" || tp.Configs[metadata.ConfigRetentionBytes] != "1001" || tp.MinISR != 3 {
		t.Fatalf("after concurrent changes: min ISR %d, configs %v", tp.MinISR, tp.Configs)
	}
}

// TestAlterConfigsNotController: a controller that is not active answers
// NotController with the leader as hint (the client sends it there).
func TestAlterConfigsNotController(t *testing.T) {
	store := metadata.NewStore()
	fr := newFakeRaft(store, 1, 1, 2, 3)
	fr.setLeader(3, 4)
	c := New(Config{NodeID: 1, Raft: fr, Store: store})
	r := c.AlterConfigs(context.Background(), wire.AlterConfigsRequest{Topic: "x", Set: map[string]string{"retention.ms": "1"}})
	if r.Err != wire.NotController || r.ControllerID != 3 {
		t.Fatalf("alter configs: %+v", r)
	}
}

// TestAlterConfigsAnswersTheOffset: a change's answer carries the metadata
// offset it is in (the client waits for every node's broker to reach it); a
// refusal carries none.
func TestAlterConfigsAnswersTheOffset(t *testing.T) {
	h := newHarness(t)
	h.raft.setLeader(1, 1)
	h.tick()
	ctx := h.ctx()
	h.c.Register(ctx, wire.BrokerRegisterRequest{BrokerID: 1, Addr: "a:1", Incarnation: 1, ControllerEligible: true})
	h.c.Heartbeat(ctx, wire.BrokerHeartbeatRequest{BrokerID: 1, Incarnation: 1, MetadataOffset: int64(h.store.Image().Offset())})
	if r := h.c.CreateTopic(ctx, wire.CreateTopicRequest{Name: "t", Partitions: 1, ReplicationFactor: 1}); r.Err != wire.None {
		t.Fatalf("create: %+v", r)
	}
	before := h.store.Image().Offset()
	r := h.c.AlterConfigs(ctx, wire.AlterConfigsRequest{Topic: "t", Set: map[string]string{metadata.ConfigRetentionMs: "1000"}})
	if now := h.store.Image().Offset(); r.Err != wire.None || now <= before || r.MetadataOffset != int64(now) {
		t.Fatalf("alter: %+v; image offset %d before, %d after", r, before, now)
	}
	if r := h.c.AlterConfigs(ctx, wire.AlterConfigsRequest{Topic: "nosuch", Set: map[string]string{metadata.ConfigRetentionMs: "1"}}); r.Err != wire.UnknownTopicOrPartition || r.MetadataOffset != 0 {
		t.Fatalf("refusal: %+v", r)
	}
}
