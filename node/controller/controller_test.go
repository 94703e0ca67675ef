package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"paymentlog/node/metadata"
	"paymentlog/node/metadata/scripttest"
	"paymentlog/raftnode"
	"paymentlog/wire"
)

// harness runs a Controller (node 1 of voters 1,2,3) on a fake raft and a
// fake clock; checks run only when the test ticks.
type harness struct {
	t      *testing.T
	store  *metadata.Store
	raft   *fakeRaft
	clock  *fakeClock
	ticks  chan time.Time
	c      *Controller
	cancel context.CancelFunc
	done   chan error
	seed   atomic.Uint64
	// lastMarker is the last ControllerMarker printed by the script runner.
	lastMarker string
}

func newHarness(t *testing.T) *harness { return newHarnessWith(t, nil) }

// newHarnessWith is newHarness with changes to the controller's Config.
func newHarnessWith(t *testing.T, change func(*Config)) *harness {
	h := &harness{t: t, store: metadata.NewStore(), clock: &fakeClock{now: time.Unix(1000, 0)},
		ticks: make(chan time.Time), done: make(chan error, 1)}
	h.raft = newFakeRaft(h.store, 1, 1, 2, 3)
	lvl := slog.LevelWarn
	if testing.Verbose() {
		lvl = slog.LevelDebug
	}
	cfg := Config{NodeID: 1, Raft: h.raft, Store: h.store, HeartbeatInterval: 100 * time.Millisecond,
		SessionTimeout: time.Second, Now: h.clock.Now, Ticks: h.ticks, PreferredLeaderDelay: 500 * time.Millisecond,
		Rand:   func() uint64 { return h.seed.Add(1) },
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))}
	if change != nil {
		change(&cfg)
	}
	h.c = New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- h.c.Run(ctx) }()
	t.Cleanup(h.stop)
	return h
}

func (h *harness) stop() {
	h.cancel()
	select {
	case err := <-h.done:
		if err != nil {
			h.t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		h.t.Error("Run did not return")
	}
}

// tick runs the periodic checks and waits until they are done: the second
// send is received only after the first tick was handled, and a request
// that decides nothing returns only after the loop handled the second. (Two
// sends alone left the second tick running beside the script's next
// command: an "advance" could move the clock under it, and its fence
// landed in that command's output.)
func (h *harness) tick() {
	for range 2 {
		select {
		case h.ticks <- h.clock.Now():
		case <-time.After(10 * time.Second):
			h.t.Fatal("controller loop stuck")
		}
	}
	if h.c.active() {
		h.c.submit(h.ctx(), "barrier", func(*metadata.Image) ([]metadata.Record, error) { return nil, nil })
	}
}

func (h *harness) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	h.t.Cleanup(cancel)
	return ctx
}

// members names each id with its registered incarnation.
func (h *harness) members(ids []int32) []wire.ISRMember {
	out := make([]wire.ISRMember, 0, len(ids))
	for _, id := range ids {
		out = append(out, wire.ISRMember{BrokerID: id, Incarnation: h.inc(id)})
	}
	return out
}

func (h *harness) inc(id int32) int64 {
	b, _ := h.store.Image().Broker(id)
	return b.Incarnation
}

func TestControllerScripts(t *testing.T) {
	for _, f := range scripttest.Files(t, "testdata") {
		t.Run(f, func(t *testing.T) {
			h := newHarness(t)
			scripttest.Run(t, f, h.exec)
		})
	}
}

// exec runs one script command; its output is the reply followed by the
// records committed meanwhile. Commands:
//
//	leader id=N term=N          raft leadership changes (0 = none)
//	tick                        run the periodic checks
//	advance d=DURATION          move the clock
//	register id=N [inc=N] [broker-only]
//	heartbeat id=N [inc=N] [offset=N] [shutdown] [seq=N acked=N] [lead=N]   (offset: the image's; lead: the metadata leader it names, none: not said)
//	up ids=1,2,3                register and heartbeat each (caught up)
//	beat ids=1,2                a caught-up heartbeat from each
//	create name=T partitions=N rf=N
//	delete name=T
//	alter id=N topic=T p=N isr=1,2 [epoch=N] [pepoch=N]
//	configs topic=T [set=k=v,k=v] [del=k,k]   AlterConfigs
//	pids id=N
//	propose-error [err=dropped|none]
//	learners                    raft learners added
//	show                        the image
func (h *harness) exec(t *testing.T, c scripttest.Cmd) string {
	ctx := h.ctx()
	var out []string
	switch c.Name {
	case "leader":
		h.raft.setLeader(uint64(c.Int(t, "id", 0)), uint64(c.Int(t, "term", 1)))
		h.tick()
		out = append(out, fmt.Sprintf("active=%t", h.c.Active()))
	case "tick":
		h.tick()
	case "advance":
		h.clock.Advance(c.Duration(t, "d", 0))
	case "register":
		id := int32(c.Int(t, "id", 0))
		r := h.c.Register(ctx, wire.BrokerRegisterRequest{BrokerID: id, Addr: fmt.Sprintf("127.0.0.1:71%02d", id),
			Incarnation: c.Int(t, "inc", 1), ControllerEligible: !c.Flags["broker-only"]})
		out = append(out, fmt.Sprintf("register: err=%v ctrl=%d", r.Err, r.ControllerID))
	case "heartbeat":
		id := int32(c.Int(t, "id", 0))
		req := wire.BrokerHeartbeatRequest{BrokerID: id, Incarnation: c.Int(t, "inc", h.inc(id)),
			MetadataOffset: c.Int(t, "offset", int64(h.store.Image().Offset())), WantShutdown: c.Flags["shutdown"],
			Seq: c.Int(t, "seq", 0), AckedSeq: c.Int(t, "acked", 0)}
		if c.Has("lead") {
			lead := int32(c.Int(t, "lead", 0))
			req.MetadataLeader = &lead
		}
		r := h.c.Heartbeat(ctx, req)
		out = append(out, fmt.Sprintf("heartbeat: err=%v fenced=%t ready=%t ctrl=%d", r.Err, r.Fenced, r.ShutdownReady, r.ControllerID))
	case "up":
		for _, id := range c.IDs(t, "ids") {
			r := h.c.Register(ctx, wire.BrokerRegisterRequest{BrokerID: id, Addr: fmt.Sprintf("127.0.0.1:71%02d", id), Incarnation: 1, ControllerEligible: id <= 3})
			hb := h.c.Heartbeat(ctx, wire.BrokerHeartbeatRequest{BrokerID: id, Incarnation: 1, MetadataOffset: int64(h.store.Image().Offset())})
			out = append(out, fmt.Sprintf("up %d: register=%v heartbeat=%v fenced=%t", id, r.Err, hb.Err, hb.Fenced))
		}
	case "beat":
		var errs []string
		for _, id := range c.IDs(t, "ids") {
			r := h.c.Heartbeat(ctx, wire.BrokerHeartbeatRequest{BrokerID: id, Incarnation: h.inc(id), MetadataOffset: int64(h.store.Image().Offset())})
			if r.Err != wire.None || r.Fenced {
				errs = append(errs, fmt.Sprintf("%d: err=%v fenced=%t", id, r.Err, r.Fenced))
			}
		}
		if len(errs) > 0 {
			out = append(out, errs...)
		}
	case "create":
		r := h.c.CreateTopic(ctx, wire.CreateTopicRequest{Name: c.Args["name"], Partitions: int32(c.Int(t, "partitions", 1)),
			ReplicationFactor: int32(c.Int(t, "rf", 1))})
		out = append(out, fmt.Sprintf("create: err=%v msg=%q id=%s ctrl=%d", r.Err, r.Message, r.TopicID, r.ControllerID))
	case "delete":
		r := h.c.DeleteTopic(ctx, wire.DeleteTopicRequest{Name: c.Args["name"]})
		out = append(out, fmt.Sprintf("delete: err=%v msg=%q", r.Err, r.Message))
	case "alter":
		id := int32(c.Int(t, "id", 0))
		topic, p := c.Args["topic"], int32(c.Int(t, "p", 0))
		cur, _ := h.store.Image().Partition(topic, p)
		r := h.c.AlterPartition(ctx, wire.AlterPartitionRequest{BrokerID: id, Incarnation: h.inc(id), Topic: topic, TopicID: cur.TopicID, Partition: p,
			LeaderEpoch: int32(c.Int(t, "epoch", int64(cur.LeaderEpoch))), PartitionEpoch: int32(c.Int(t, "pepoch", int64(cur.PartitionEpoch))),
			NewISR: c.IDs(t, "isr"), Members: h.members(c.IDs(t, "isr"))})
		out = append(out, fmt.Sprintf("alter: err=%v isr=%v epoch=%d pepoch=%d", r.Err, r.ISR, r.LeaderEpoch, r.PartitionEpoch))
	case "configs":
		out = append(out, h.alterConfigs(ctx, c))
	case "pids":
		start, n, err := h.c.AllocateProducerIDBlock(ctx, int32(c.Int(t, "id", 0)))
		out = append(out, fmt.Sprintf("pids: start=%d n=%d err=%v", start, n, err))
	case "propose-error":
		switch c.Args["err"] {
		case "dropped":
			h.raft.setProposeErr(raftnode.ErrProposalDropped)
		default:
			h.raft.setProposeErr(nil)
		}
	case "learners":
		// The reconciler runs beside the loop: wait for it, with a deadline.
		deadline := time.Now().Add(10 * time.Second)
		for h.c.learnersMissing(h.store.Image()) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		out = append(out, fmt.Sprintf("learners: %v", h.raft.learners()))
	case "show":
		out = append(out, strings.TrimRight(h.store.Image().String(), "\n"))
	default:
		t.Fatalf("line %d: unknown command %q", c.Line, c.Name)
	}
	for _, r := range h.raft.takeCommitted() {
		// Every controller entry opens with its marker; print a marker
		// only when the controller or term changes.
		if strings.HasPrefix(r, "ControllerMarker") {
			if r == h.lastMarker {
				continue
			}
			h.lastMarker = r
		}
		out = append(out, "committed: "+r)
	}
	return strings.Join(out, "\n")
}

// TestConcurrentDecisionsSerialize: concurrent requests never decide on the
// same stale image: producer-id blocks never overlap and concurrent topic
// creations of one name succeed exactly once.
func TestConcurrentDecisionsSerialize(t *testing.T) {
	h := newHarness(t)
	h.raft.setLeader(1, 1)
	h.tick()
	ctx := h.ctx()
	for id := int32(1); id <= 3; id++ {
		h.c.Register(ctx, wire.BrokerRegisterRequest{BrokerID: id, Addr: "a:1", Incarnation: 1, ControllerEligible: true})
		h.c.Heartbeat(ctx, wire.BrokerHeartbeatRequest{BrokerID: id, Incarnation: 1, MetadataOffset: int64(h.store.Image().Offset())})
	}
	const n = 64
	var wg sync.WaitGroup
	starts := make([]int64, n)
	created := make([]wire.ErrorCode, n)
	for i := range n {
		wg.Add(2)
		go func() {
			defer wg.Done()
			s, _, err := h.c.AllocateProducerIDBlock(ctx, int32(1+i%3))
			if err != nil {
				t.Error(err)
			}
			starts[i] = s
		}()
		go func() {
			defer wg.Done()
			created[i] = h.c.CreateTopic(ctx, wire.CreateTopicRequest{Name: "same", Partitions: 3, ReplicationFactor: 3}).Err
		}()
	}
	wg.Wait()
	seen := map[int64]bool{}
	for _, s := range starts {
		if seen[s] || s%metadata.DefaultProducerIDBlock != 0 {
			t.Fatalf("block start %d repeated or misaligned", s)
		}
		seen[s] = true
	}
	ok := 0
	for _, code := range created {
		switch code {
		case wire.None:
			ok++
		case wire.TopicAlreadyExists:
		default:
			t.Fatalf("create: %v", code)
		}
	}
	if ok != 1 || h.store.Image().NextProducerID() != n*metadata.DefaultProducerIDBlock {
		t.Fatalf("%d creations succeeded, next pid %d", ok, h.store.Image().NextProducerID())
	}
	h.raft.mu.Lock()
	props := h.raft.mu.proposals
	h.raft.mu.Unlock()
	t.Logf("%d requests in %d proposals", 2*n, props)
}

// TestNotControllerWhenNotRunning: before Run, or on a follower, every
// request answers NotController with the leader hint.
func TestNotControllerWhenNotRunning(t *testing.T) {
	store := metadata.NewStore()
	fr := newFakeRaft(store, 1, 1, 2, 3)
	fr.setLeader(3, 4)
	c := New(Config{NodeID: 1, Raft: fr, Store: store})
	ctx := context.Background()
	if r := c.Register(ctx, wire.BrokerRegisterRequest{BrokerID: 1, Addr: "a:1", Incarnation: 1}); r.Err != wire.NotController || r.ControllerID != 3 {
		t.Fatalf("register: %+v", r)
	}
	if r := c.Heartbeat(ctx, wire.BrokerHeartbeatRequest{BrokerID: 1}); r.Err != wire.NotController || r.ControllerID != 3 {
		t.Fatalf("heartbeat: %+v", r)
	}
	if r := c.CreateTopic(ctx, wire.CreateTopicRequest{Name: "x"}); r.Err != wire.NotController || r.ControllerID != 3 {
		t.Fatalf("create: %+v", r)
	}
	if _, _, err := c.AllocateProducerIDBlock(ctx, 1); !errors.Is(err, ErrNotController) {
		t.Fatalf("pids: %v", err)
	}
}
