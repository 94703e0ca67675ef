package controller

import (
	"strings"
	"testing"

	"paymentlog/node/metadata"
	"paymentlog/wire"
)

// A replication factor change commits one entry (the topic's new RF and a
// PartitionChange per partition) and answers with the new RF; a retry
// commits nothing and succeeds; a refusal answers with the current RF. A
// cluster config change commits one record, a repeat of it none.
func TestReplicationFactorAndClusterConfigsThroughTheController(t *testing.T) {
	h := newHarness(t)
	partitionsUp(t, h, 1)
	ctx := h.ctx()
	h.c.Register(ctx, wire.BrokerRegisterRequest{BrokerID: 4, Addr: "127.0.0.1:7104", Incarnation: 1, MetadataVersion: metadata.MetadataVersion})
	h.c.Heartbeat(ctx, wire.BrokerHeartbeatRequest{BrokerID: 4, Incarnation: 1, MetadataOffset: int64(h.store.Image().Offset())})
	committed := func() (out []string) {
		for _, rec := range h.raft.takeCommitted() {
			if !strings.HasPrefix(rec, "ControllerMarker") {
				out = append(out, rec)
			}
		}
		return out
	}
	committed()
	r := h.c.AlterReplicationFactor(ctx, wire.AlterReplicationFactorRequest{Topic: "t", ReplicationFactor: 4})
	if r.Err != wire.None || r.ReplicationFactor != 4 {
		t.Fatalf("raise: %+v", r)
	}
	got := committed()
	if len(got) != 3 || !strings.HasPrefix(got[0], "TopicConfigChanged t ") || !strings.Contains(got[0], "rf=4") ||
		!strings.HasPrefix(got[1], "PartitionChange t-0 ") || !strings.HasPrefix(got[2], "PartitionChange t-1 ") {
		t.Fatalf("committed %q", got)
	}
	if r := h.c.AlterReplicationFactor(ctx, wire.AlterReplicationFactorRequest{Topic: "t", ReplicationFactor: 4}); r.Err != wire.None || r.ReplicationFactor != 4 {
		t.Fatalf("retry: %+v", r)
	}
	if got := committed(); len(got) != 0 {
		t.Fatalf("a retry committed %q", got)
	}
	r = h.c.AlterReplicationFactor(ctx, wire.AlterReplicationFactorRequest{Topic: "t", ReplicationFactor: 5})
	if r.Err != wire.InvalidReplicationFactor || r.ReplicationFactor != 4 || !strings.Contains(r.Message, "at most 4 replicas") {
		t.Fatalf("refusal: %+v", r)
	}

	set := wire.AlterClusterConfigsRequest{Set: map[string]string{"reassignment.throttle.bytes": "1024"}}
	if r := h.c.AlterClusterConfigs(ctx, set); r.Err != wire.None || r.MetadataOffset != int64(h.store.Image().Offset()) {
		t.Fatalf("cluster config: %+v", r)
	}
	if got := committed(); len(got) != 1 || got[0] != "ClusterConfigChanged reassignment.throttle.bytes=1024" {
		t.Fatalf("committed %q", got)
	}
	if r := h.c.AlterClusterConfigs(ctx, set); r.Err != wire.None {
		t.Fatalf("repeat: %+v", r)
	}
	if got := committed(); len(got) != 0 {
		t.Fatalf("a repeat committed %q", got)
	}
	if r := h.c.AlterClusterConfigs(ctx, wire.AlterClusterConfigsRequest{Set: map[string]string{"nope": "1"}}); r.Err != wire.InvalidConfig {
		t.Fatalf("unknown key: %+v", r)
	}
}
