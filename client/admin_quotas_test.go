package client

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"paymentlog/client/clienttest"
	"paymentlog/quic"
	"paymentlog/wire"
)

// AlterClientQuotas goes to the active controller (NotController from the
// one that was is followed) and changes several entities in one request;
// DescribeClientQuotas lists the default first, then by principal; a
// delete of every key removes the entity, a repeat changes nothing and
// succeeds.
func TestAdminClientQuotas(t *testing.T) {
	fc := clienttest.New(3)
	fc.SetController(2)
	c := mustFakeClient(t, fc)
	a := c.Admin()
	ctx := testCtx(t)
	if qs, err := a.DescribeClientQuotas(ctx); err != nil || qs == nil || len(qs) != 0 {
		t.Fatalf("describe with none: %v %v; want an empty, non-nil list", qs, err)
	}
	err := a.AlterClientQuotas(ctx,
		wire.QuotaEntry{Principal: "User:billing", Set: map[string]int64{wire.QuotaProducerByteRate: 1 << 20}},
		wire.QuotaEntry{Principal: "", Set: map[string]int64{wire.QuotaConsumerByteRate: 512 << 10, wire.QuotaProducerByteRate: 4 << 20}},
		wire.QuotaEntry{Principal: "User:audit", Set: map[string]int64{wire.QuotaConsumerByteRate: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	if n := fc.Calls(wire.TypeAlterClientQuotas); n != 1 {
		t.Fatalf("%d AlterClientQuotas requests, want 1", n)
	}
	qs, err := a.DescribeClientQuotas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []wire.ClientQuota{
		{Principal: "", Values: map[string]int64{wire.QuotaConsumerByteRate: 512 << 10, wire.QuotaProducerByteRate: 4 << 20}},
		{Principal: "User:audit", Values: map[string]int64{wire.QuotaConsumerByteRate: 1 << 20}},
		{Principal: "User:billing", Values: map[string]int64{wire.QuotaProducerByteRate: 1 << 20}},
	}
	checkQuotas(t, "after set", qs, want)

	// Set one key and delete another of the same entity; delete the
	// default's producer rate. The controller moved: node 2 answers
	// NotController and the client follows.
	fc.SetController(3)
	err = a.AlterClientQuotas(ctx,
		wire.QuotaEntry{Principal: "User:billing", Set: map[string]int64{wire.QuotaConsumerByteRate: 2048}, Delete: []string{wire.QuotaProducerByteRate}},
		wire.QuotaEntry{Principal: "", Delete: []string{wire.QuotaProducerByteRate}})
	if err != nil {
		t.Fatal(err)
	}
	if n := fc.Calls(wire.TypeAlterClientQuotas); n < 3 {
		t.Fatalf("%d AlterClientQuotas requests: the second alter should have met NotController first", n)
	}
	want[0].Values = map[string]int64{wire.QuotaConsumerByteRate: 512 << 10}
	want[2].Values = map[string]int64{wire.QuotaConsumerByteRate: 2048}
	checkQuotas(t, "after set and delete", fc.ClientQuotas(), want)

	// Every key of an entity deleted: it has none left.
	del := wire.QuotaEntry{Principal: "User:audit", Delete: []string{wire.QuotaConsumerByteRate, wire.QuotaProducerByteRate}}
	if err := a.AlterClientQuotas(ctx, del); err != nil {
		t.Fatal(err)
	}
	if err := a.AlterClientQuotas(ctx, del); err != nil {
		t.Fatalf("delete again: %v, want no error (nothing changes)", err)
	}
	if err := a.AlterClientQuotas(ctx); err != nil {
		t.Fatalf("no entries: %v", err)
	}
	qs, err = a.DescribeClientQuotas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checkQuotas(t, "after deleting audit's", qs, []wire.ClientQuota{want[0], want[2]})
}

func checkQuotas(t *testing.T, what string, got, want []wire.ClientQuota) {
	t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = got[i].Principal == want[i].Principal && maps.Equal(got[i].Values, want[i].Values)
	}
	if !ok {
		t.Fatalf("%s: %+v, want %+v", what, got, want)
	}
}

// Invalid entries are refused before anything is sent, with
// InvalidRequest naming the entity and what is wrong.
func TestAdminAlterClientQuotasInvalid(t *testing.T) {
	fc := clienttest.New(1)
	c := mustFakeClient(t, fc)
	ctx := testCtx(t)
	rate := func(k string, v int64) map[string]int64 { return map[string]int64{k: v} }
	for _, c2 := range []struct {
		entries []wire.QuotaEntry
		want    string
	}{
		{[]wire.QuotaEntry{{Principal: "User:*", Set: rate(wire.QuotaProducerByteRate, 1<<20)}}, "User:* is no principal for a quota"},
		{[]wire.QuotaEntry{{Principal: "billing", Set: rate(wire.QuotaProducerByteRate, 1<<20)}}, `principal "billing": want User:NAME`},
		{[]wire.QuotaEntry{{Principal: "User:billing"}}, "quota of User:billing: nothing to set or delete"},
		{[]wire.QuotaEntry{{Principal: "", Set: rate("request_percentage", 5000)}}, `quota of the default: quota key "request_percentage"`},
		{[]wire.QuotaEntry{{Principal: "User:billing", Set: rate(wire.QuotaConsumerByteRate, 100)}}, "quota of User:billing: quota consumer_byte_rate=100: want bytes per second, at least 1024"},
		{[]wire.QuotaEntry{{Principal: "User:billing", Set: rate(wire.QuotaConsumerByteRate, 4096), Delete: []string{wire.QuotaConsumerByteRate}}}, "set and deleted"},
		{[]wire.QuotaEntry{{Principal: "User:billing", Delete: []string{"x"}}}, `quota key "x"`},
		{[]wire.QuotaEntry{
			{Principal: "User:billing", Set: rate(wire.QuotaConsumerByteRate, 4096)},
			{Principal: "User:billing", Delete: []string{wire.QuotaProducerByteRate}},
		}, "quota of User:billing: named twice"},
		{make([]wire.QuotaEntry, wire.MaxACLsPerRequest+1), "more than 1000"},
	} {
		err := c.Admin().AlterClientQuotas(ctx, c2.entries...)
		if ErrorCode(err) != wire.InvalidRequest || !strings.Contains(err.Error(), c2.want) {
			t.Errorf("%.200v: %v, want InvalidRequest with %q", c2.entries, err, c2.want)
		}
	}
	if n := fc.Calls(wire.TypeAlterClientQuotas); n != 0 {
		t.Fatalf("%d requests sent for invalid entries", n)
	}
}

// A principal that may not change or list quotas gets
// ClusterAuthorizationFailed at once, with the node's message.
func TestAdminClientQuotasAuthorizationFailedFailsFast(t *testing.T) {
	fc := clienttest.New(3)
	reqs := refuseAll(fc, wire.ClusterAuthorizationFailed, wire.TypeAlterClientQuotas, wire.TypeDescribeClientQuotas)
	c := mustFakeClient(t, fc)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	check := func(what string, err error) {
		t.Helper()
		wantFailedFast(t, ctx, what, err, wire.ClusterAuthorizationFailed)
	}
	check("alter", c.Admin().AlterClientQuotas(ctx, wire.QuotaEntry{Principal: "User:a", Delete: []string{wire.QuotaProducerByteRate}}))
	_, err := c.Admin().DescribeClientQuotas(ctx)
	check("describe", err)
	if n := reqs.Load(); n != 2 {
		t.Fatalf("%d requests, want one per call", n)
	}
}

// A node whose build has no handler for the quota requests refuses them
// unread: alter fails at once saying so; describe, after asking every
// node, says so too.
func TestAdminClientQuotasUnknownRequest(t *testing.T) {
	fc := clienttest.New(2)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := newWithCaller(Config{Bootstrap: fc.Addrs(), Logger: testLogger(t)}, unknownTypes{fc, []quic.FrameType{wire.TypeAlterClientQuotas, wire.TypeDescribeClientQuotas}})
	defer c.Close(context.Background())
	err := c.Admin().AlterClientQuotas(ctx, wire.QuotaEntry{Principal: "User:a", Delete: []string{wire.QuotaProducerByteRate}})
	wantUnknownType(t, ctx, "alter", err)
	_, err = c.Admin().DescribeClientQuotas(ctx)
	wantUnknownType(t, ctx, "describe", err)
}

// Produce answers a leader held back for a quota are counted in Stats:
// how many, and their ThrottleMs summed; unthrottled ones are not.
func TestProducerStatsThrottled(t *testing.T) {
	fc := clienttest.New(1)
	fc.CreateTopic("t", 1)
	c := mustFakeClient(t, fc)
	p, err := c.NewProducer(ProducerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	ctx := testCtx(t)
	if _, err := p.ProduceSync(ctx, &Record{Topic: "t", Value: []byte("a")}); err != nil {
		t.Fatal(err)
	}
	if s := p.Stats(); s.ThrottledRequests != 0 || s.ThrottleTime != 0 {
		t.Fatalf("unthrottled: %d throttled requests, %v", s.ThrottledRequests, s.ThrottleTime)
	}
	const d = 7 * time.Millisecond
	fc.SetThrottle(d, 0)
	for i := 0; i < 3; i++ {
		if _, err := p.ProduceSync(ctx, &Record{Topic: "t", Value: []byte("b")}); err != nil {
			t.Fatal(err)
		}
	}
	s := p.Stats()
	if s.ThrottledRequests != 3 || s.ThrottleTime != 3*d || s.Requests != 4 {
		t.Fatalf("throttled: %d of %d requests, %v; want 3 of 4, %v", s.ThrottledRequests, s.Requests, s.ThrottleTime, 3*d)
	}
	if q := s.RequestLatency.Quantile(0.99); q < d {
		t.Fatalf("request round trip p99 %v, below the throttle %v", q, d)
	}
}
