package controller

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"paymentlog/wire"
)

func topicRead(principal, topic string) wire.ACLBinding {
	return wire.ACLBinding{Principal: principal, ResourceType: wire.ResourceTopic, PatternType: wire.PatternLiteral,
		Name: topic, Operation: wire.OpRead, Permission: wire.PermissionAllow}
}

// ACL bindings through the controller: a creation commits one record of
// the new bindings and answers how many; a retry commits nothing and
// answers 0; an invalid binding is refused by name; a deletion answers
// the bindings its filters selected (none: an empty list, nothing
// committed); a follower answers NotController with the hint.
func TestACLsThroughTheController(t *testing.T) {
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
	billing, audit := topicRead("User:billing", "payments"), topicRead("User:audit", "payments")
	r := h.c.CreateACLs(ctx, wire.CreateACLsRequest{ACLs: []wire.ACLBinding{billing, audit, billing}})
	if r.Err != wire.None || r.Created != 2 || r.ControllerID != 1 || r.MetadataOffset != int64(h.store.Image().Offset()) {
		t.Fatalf("create: %+v", r)
	}
	want := "ACLsCreated allow User:audit read topic literal:payments; allow User:billing read topic literal:payments"
	if got := committed(); len(got) != 1 || got[0] != want {
		t.Fatalf("committed %q", got)
	}
	if acls := h.store.Image().ACLs(); acls.Len() != 2 || !acls.Has(billing) || !acls.Has(audit) {
		t.Fatalf("image holds %v", acls.Bindings())
	}
	r = h.c.CreateACLs(ctx, wire.CreateACLsRequest{ACLs: []wire.ACLBinding{audit}})
	if r.Err != wire.None || r.Created != 0 || r.MetadataOffset != int64(h.store.Image().Offset()) {
		t.Fatalf("retry: %+v", r)
	}
	if got := committed(); len(got) != 0 {
		t.Fatalf("a retry committed %q", got)
	}
	bad := topicRead("bob", "payments")
	if r := h.c.CreateACLs(ctx, wire.CreateACLsRequest{ACLs: []wire.ACLBinding{bad}}); r.Err != wire.InvalidRequest || r.Created != 0 ||
		!strings.Contains(r.Message, `ACL binding 0 ("allow bob read topic literal:payments"): principal "bob"`) {
		t.Fatalf("invalid binding: %+v", r)
	}

	d := h.c.DeleteACLs(ctx, wire.DeleteACLsRequest{Filters: []wire.ACLFilter{{Principal: "User:billing"}, {Principal: "User:nobody"}}})
	if d.Err != wire.None || !reflect.DeepEqual(d.Deleted, []wire.ACLBinding{billing}) || d.ControllerID != 1 ||
		d.MetadataOffset != int64(h.store.Image().Offset()) {
		t.Fatalf("delete: %+v", d)
	}
	if got := committed(); len(got) != 1 || got[0] != "ACLsDeleted allow User:billing read topic literal:payments" {
		t.Fatalf("committed %q", got)
	}
	d = h.c.DeleteACLs(ctx, wire.DeleteACLsRequest{Filters: []wire.ACLFilter{{Principal: "User:billing"}}})
	if d.Err != wire.None || d.Deleted == nil || len(d.Deleted) != 0 {
		t.Fatalf("delete again: %+v", d)
	}
	if got := committed(); len(got) != 0 {
		t.Fatalf("deleting nothing committed %q", got)
	}
	if d := h.c.DeleteACLs(ctx, wire.DeleteACLsRequest{}); d.Err != wire.InvalidRequest || d.Deleted != nil {
		t.Fatalf("no filter: %+v", d)
	}
	if d := h.c.DeleteACLs(ctx, wire.DeleteACLsRequest{Filters: []wire.ACLFilter{{}}}); d.Err != wire.None || !reflect.DeepEqual(d.Deleted, []wire.ACLBinding{audit}) {
		t.Fatalf("delete all: %+v", d)
	}
	if acls := h.store.Image().ACLs(); acls != nil {
		t.Fatalf("bindings left: %v", acls.Bindings())
	}

	h.raft.setLeader(2, 2)
	if r := h.c.CreateACLs(ctx, wire.CreateACLsRequest{ACLs: []wire.ACLBinding{billing}}); r.Err != wire.NotController || r.ControllerID != 2 || r.Created != 0 {
		t.Fatalf("create at a follower: %+v", r)
	}
	if d := h.c.DeleteACLs(ctx, wire.DeleteACLsRequest{Filters: []wire.ACLFilter{{}}}); d.Err != wire.NotController || d.ControllerID != 2 || d.Deleted != nil {
		t.Fatalf("delete at a follower: %+v", d)
	}
}

// Concurrent requests over the same bindings, decided in batches: each
// binding is counted created by exactly one request and reported deleted
// by exactly one, since every answer comes from the decision committed.
func TestConcurrentACLRequests(t *testing.T) {
	h := newHarness(t)
	partitionsUp(t, h, 1)
	ctx := h.ctx()
	const n, distinct = 48, 8
	binding := func(i int) wire.ACLBinding { return topicRead(fmt.Sprintf("User:u%d", i%distinct), "t") }
	var wg sync.WaitGroup
	created := make([]wire.CreateACLsResponse, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			created[i] = h.c.CreateACLs(ctx, wire.CreateACLsRequest{ACLs: []wire.ACLBinding{binding(i), binding(i + 1)}})
		}()
	}
	wg.Wait()
	sum := 0
	for _, r := range created {
		if r.Err != wire.None {
			t.Fatalf("create: %+v", r)
		}
		sum += int(r.Created)
	}
	if sum != distinct || h.store.Image().ACLs().Len() != distinct {
		t.Fatalf("created %d in all, the image holds %d; want %d", sum, h.store.Image().ACLs().Len(), distinct)
	}
	deleted := make([]wire.DeleteACLsResponse, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			deleted[i] = h.c.DeleteACLs(ctx, wire.DeleteACLsRequest{Filters: []wire.ACLFilter{
				{Principal: binding(i).Principal}, {Principal: binding(i + 3).Principal}}})
		}()
	}
	wg.Wait()
	seen := map[wire.ACLBinding]int{}
	for _, r := range deleted {
		if r.Err != wire.None {
			t.Fatalf("delete: %+v", r)
		}
		for _, b := range r.Deleted {
			seen[b]++
		}
	}
	for i := range distinct {
		if seen[binding(i)] != 1 {
			t.Fatalf("%v reported deleted %d times", binding(i), seen[binding(i)])
		}
	}
	if len(seen) != distinct || h.store.Image().ACLs() != nil {
		t.Fatalf("deleted %v; left %v", seen, h.store.Image().ACLs().Bindings())
	}
}
