package controller

import (
	"reflect"
	"strings"
	"testing"

	"paymentlog/node/metadata"
	"paymentlog/wire"
)

// Client quotas through the controller: a change commits one record of
// what it changes; a retry commits nothing and succeeds; an invalid entry
// is refused by entity; a broker whose build does not apply version 6
// holds changes back; a follower answers NotController with the hint.
func TestClientQuotasThroughTheController(t *testing.T) {
	h := newHarness(t)
	partitionsUp(t, h, 1)
	ctx := h.ctx()
	committed := func() (out []string) {
		for _, rec := range h.raft.takeCommitted() {
			if !strings.HasPrefix(rec, "ControllerMarker") {
				out = append(out, rec)
			}
		}
		return out
	}
	committed()
	const mib = 1 << 20
	req := wire.AlterClientQuotasRequest{Entries: []wire.QuotaEntry{
		{Principal: "User:billing", Set: map[string]int64{wire.QuotaProducerByteRate: mib}},
		{Principal: "", Set: map[string]int64{wire.QuotaConsumerByteRate: 2 * mib}},
	}}

	// A broker of an older build is registered: changes wait for its
	// upgrade (a restart on this build).
	h.c.Register(ctx, wire.BrokerRegisterRequest{BrokerID: 4, Addr: "127.0.0.1:7104", Incarnation: 1, MetadataVersion: 5})
	committed()
	if r := h.c.AlterClientQuotas(ctx, req); r.Err != wire.UnsupportedVersion ||
		!strings.Contains(r.Message, "changing client quotas needs metadata version 6, which the builds of brokers [4 (version 5)]") {
		t.Fatalf("with an old broker: %+v", r)
	}
	if got := committed(); len(got) != 0 {
		t.Fatalf("a refused change committed %q", got)
	}
	if r := h.c.Register(ctx, wire.BrokerRegisterRequest{BrokerID: 4, Addr: "127.0.0.1:7104", Incarnation: 2, MetadataVersion: metadata.MetadataVersion}); r.Err != wire.None {
		t.Fatalf("upgraded broker: %+v", r)
	}
	committed()

	r := h.c.AlterClientQuotas(ctx, req)
	if r.Err != wire.None || r.ControllerID != 1 || r.MetadataOffset != int64(h.store.Image().Offset()) {
		t.Fatalf("alter: %+v", r)
	}
	want := "ClientQuotasChanged default consumer_byte_rate=2097152; User:billing producer_byte_rate=1048576"
	if got := committed(); len(got) != 1 || got[0] != want {
		t.Fatalf("committed %q", got)
	}
	img := h.store.Image()
	if rate, ok := img.ClientQuota("User:billing", wire.QuotaConsumerByteRate); !ok || rate != 2*mib {
		t.Fatalf("billing's consumer rate (the default's): %d %t", rate, ok)
	}
	wantQS := []wire.ClientQuota{
		{Principal: "", Values: map[string]int64{wire.QuotaConsumerByteRate: 2 * mib}},
		{Principal: "User:billing", Values: map[string]int64{wire.QuotaProducerByteRate: mib}},
	}
	if got := img.ClientQuotas(); !reflect.DeepEqual(got, wantQS) {
		t.Fatalf("image holds %v", got)
	}

	r = h.c.AlterClientQuotas(ctx, req)
	if r.Err != wire.None || r.MetadataOffset != int64(h.store.Image().Offset()) {
		t.Fatalf("retry: %+v", r)
	}
	if got := committed(); len(got) != 0 {
		t.Fatalf("a retry committed %q", got)
	}
	bad := wire.AlterClientQuotasRequest{Entries: []wire.QuotaEntry{{Principal: "User:audit", Set: map[string]int64{wire.QuotaProducerByteRate: 10}}}}
	if r := h.c.AlterClientQuotas(ctx, bad); r.Err != wire.InvalidRequest ||
		!strings.Contains(r.Message, `quota entry 0 for "User:audit": quota producer_byte_rate=10: want bytes per second, at least 1024`) {
		t.Fatalf("invalid entry: %+v", r)
	}
	if r := h.c.AlterClientQuotas(ctx, wire.AlterClientQuotasRequest{}); r.Err != wire.InvalidRequest {
		t.Fatalf("no entry: %+v", r)
	}

	del := wire.AlterClientQuotasRequest{Entries: []wire.QuotaEntry{{Principal: "User:billing", Delete: []string{wire.QuotaProducerByteRate, wire.QuotaConsumerByteRate}}}}
	if r := h.c.AlterClientQuotas(ctx, del); r.Err != wire.None {
		t.Fatalf("delete: %+v", r)
	}
	if got := committed(); len(got) != 1 || got[0] != "ClientQuotasChanged User:billing -producer_byte_rate" {
		t.Fatalf("committed %q", got)
	}
	if got := h.store.Image().ClientQuotas(); !reflect.DeepEqual(got, wantQS[:1]) {
		t.Fatalf("after the deletion: %v", got)
	}

	h.raft.setLeader(2, 2)
	if r := h.c.AlterClientQuotas(ctx, req); r.Err != wire.NotController || r.ControllerID != 2 {
		t.Fatalf("alter at a follower: %+v", r)
	}
}
