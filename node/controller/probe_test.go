package controller

import (
	"context"
	"sync"
	"testing"
	"time"

	"paymentlog/internal/portprobe"
	"paymentlog/node/metadata"
	"paymentlog/wire"
)

// fakePorts answers the controller's probes from the results set for
// addresses (Open for the others); a probe of an address in hold waits
// until it is released.
type fakePorts struct {
	mu     sync.Mutex
	closed map[string]portprobe.Result
	probed []string
	since  map[string]time.Time // the last probe's since, by address
	hold   map[string]chan struct{}
}

func newFakePorts() *fakePorts {
	return &fakePorts{closed: map[string]portprobe.Result{}, since: map[string]time.Time{}, hold: map[string]chan struct{}{}}
}

func (f *fakePorts) probe(ctx context.Context, addr string, since time.Time) (portprobe.Result, error) {
	f.mu.Lock()
	f.probed = append(f.probed, addr)
	f.since[addr] = since
	gate := f.hold[addr]
	f.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return portprobe.Open, nil
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed[addr], nil
}

// set makes addr's probes answer Closed (a refused probe) or Open.
func (f *fakePorts) set(addr string, closed bool) {
	res := portprobe.Open
	if closed {
		res = portprobe.Closed
	}
	f.setResult(addr, res)
}

func (f *fakePorts) setResult(addr string, res portprobe.Result) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed[addr] = res
}

func (f *fakePorts) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.probed
	f.probed = nil
	return out
}

// probeHarness is the harness with probes from ports, brokers 1-3 up and
// node 1 the active controller (heartbeats every 100 ms, session 1 s, so
// probes after 150 ms of silence).
func probeHarness(t *testing.T) (*harness, *fakePorts) {
	ports := newFakePorts()
	h := newHarnessWith(t, func(c *Config) { c.Probe = ports.probe })
	ctx := h.ctx()
	h.raft.setLeader(1, 1)
	h.tick()
	for id := int32(1); id <= 3; id++ {
		if r := h.c.Register(ctx, wire.BrokerRegisterRequest{BrokerID: id, Addr: addrOf(id), Incarnation: 1, ControllerEligible: true}); r.Err != wire.None {
			t.Fatalf("register %d: %v", id, r.Err)
		}
	}
	h.beat(1, 2, 3)
	return h, ports
}

func addrOf(id int32) string { return "127.0.0.1:710" + string(rune('0'+id)) }

func (h *harness) beat(ids ...int32) {
	h.t.Helper()
	for _, id := range ids {
		r := h.c.Heartbeat(h.ctx(), wire.BrokerHeartbeatRequest{BrokerID: id, Incarnation: h.inc(id), MetadataOffset: int64(h.store.Image().Offset())})
		if r.Err != wire.None {
			h.t.Fatalf("heartbeat %d: %v", id, r.Err)
		}
	}
}

// probeTick ticks, waits for the probes it started, and ticks again so
// that a fence their results call for is committed.
func (h *harness) probeTick() {
	h.tick()
	h.c.probes.Wait()
	h.tick()
}

// prevControllerHarness is the harness with probes from ports and brokers
// 1-3 registered and unfenced by node 2 as the active controller (term 1),
// before node 1 takes over.
func prevControllerHarness(t *testing.T, ports *fakePorts) *harness {
	h := newHarnessWith(t, func(c *Config) { c.Probe = ports.probe })
	for id := int32(1); id <= 3; id++ {
		h.raft.commitForeign(mustEntry(t, metadata.ControllerMarker{ControllerID: 2, Term: 1},
			metadata.BrokerRegistered{ID: id, Addr: addrOf(id), Incarnation: 1, ControllerEligible: true}))
		h.raft.commitForeign(mustEntry(t, metadata.ControllerMarker{ControllerID: 2, Term: 1},
			metadata.BrokerUnfenced{ID: id, Incarnation: 1}))
	}
	return h
}

// onlyProbed: at least one probe, each of addr (a tick probes again a
// broker whose last probe has come back).
func onlyProbed(got []string, addr string) bool {
	for _, a := range got {
		if a != addr {
			return false
		}
	}
	return len(got) > 0
}

func (h *harness) fenced(id int32) bool {
	b, _ := h.store.Image().Broker(id)
	return b.Fenced
}

// A silent broker is probed once it has been silent 1.5 heartbeat
// intervals; an open port changes nothing, a closed one fences it long
// before its session would run out. The controller's own broker is never
// probed.
func TestProbeFencesASilentBrokerWhosePortIsClosed(t *testing.T) {
	h, ports := probeHarness(t)
	lastBeat := h.clock.Now()

	h.clock.Advance(100 * time.Millisecond)
	h.beat(3)
	h.probeTick()
	if got := ports.take(); len(got) != 0 {
		t.Fatalf("probed %v after 100 ms of silence; want none before 150 ms", got)
	}

	h.clock.Advance(100 * time.Millisecond) // 1 and 2 silent 200 ms
	h.beat(3)
	h.probeTick()
	if got := ports.take(); !onlyProbed(got, addrOf(2)) {
		t.Fatalf("probed %v; want only broker 2 (1 is the controller's own, 3 beats)", got)
	}
	// The probe is told when broker 2 was last heard from: a port the
	// node's own traffic found closed after that counts (node/port_probe.go).
	ports.mu.Lock()
	since := ports.since[addrOf(2)]
	ports.mu.Unlock()
	if !since.Equal(lastBeat) {
		t.Fatalf("probe of broker 2 given since %v; want its last heartbeat at %v", since, lastBeat)
	}
	if h.fenced(2) {
		t.Fatal("broker 2 fenced on an open port")
	}

	ports.set(addrOf(2), true)
	h.clock.Advance(50 * time.Millisecond)
	h.beat(3)
	h.probeTick()
	if !h.fenced(2) {
		t.Fatal("broker 2, silent 250 ms with its port closed, is not fenced")
	}
	if h.fenced(3) || h.fenced(1) {
		t.Fatal("a broker that beats was fenced")
	}
	fences, probes := h.c.FenceCounts()
	if fences[fenceClosedPort] != 1 || fences[fenceSession] != 0 || probes == 0 {
		t.Fatalf("fences %v, probes %d; want 1 for a closed port, none for a session, and probes counted", fences, probes)
	}
	if by := h.c.PortClosedCounts(); by != [numPortFinders]uint64{foundByProbe: 1} {
		t.Fatalf("port_closed fences by finder %v; want the one by the probe", by)
	}

	// Fenced: no more probes of it.
	ports.take()
	h.clock.Advance(200 * time.Millisecond)
	h.beat(3)
	h.probeTick()
	if got := ports.take(); len(got) != 0 {
		t.Fatalf("probed %v after broker 2 was fenced", got)
	}
}

// A port the node's own traffic found closed since the broker's last
// heartbeat (the probe answers Seen) fences it as a refused probe does,
// and the fence is counted as found by that traffic.
func TestPortSeenClosedByOwnTrafficFences(t *testing.T) {
	h, ports := probeHarness(t)
	ports.setResult(addrOf(2), portprobe.Seen)
	h.clock.Advance(200 * time.Millisecond)
	h.beat(3)
	h.probeTick()
	if !h.fenced(2) {
		t.Fatal("broker 2, silent 200 ms with its port seen closed by this node's traffic, is not fenced")
	}
	if fences, _ := h.c.FenceCounts(); fences[fenceClosedPort] != 1 {
		t.Fatalf("fences %v; want 1 for a closed port", fences)
	}
	if by := h.c.PortClosedCounts(); by != [numPortFinders]uint64{foundByTraffic: 1} {
		t.Fatalf("port_closed fences by finder %v; want the one by this node's traffic", by)
	}
}

// A refusal counts only for a probe sent after the broker's latest
// heartbeat: one that beats while the probe is out is not fenced for it.
func TestProbeRefusedAfterAHeartbeatIsIgnored(t *testing.T) {
	h, ports := probeHarness(t)
	gate := make(chan struct{})
	ports.mu.Lock()
	ports.hold[addrOf(2)] = gate
	ports.closed[addrOf(2)] = portprobe.Closed
	ports.mu.Unlock()

	h.clock.Advance(200 * time.Millisecond)
	h.beat(3)
	h.tick() // the probe of 2 starts and waits at the gate
	h.clock.Advance(10 * time.Millisecond)
	h.beat(2)
	close(gate)
	h.c.probes.Wait()
	h.tick()
	if h.fenced(2) {
		t.Fatal("broker 2 fenced for a refusal of a probe sent before its latest heartbeat")
	}
	if fences, _ := h.c.FenceCounts(); fences[fenceClosedPort] != 0 {
		t.Fatalf("fences %v; want none for a closed port", fences)
	}
}

// Without Probe the session alone decides: a silent broker is fenced when
// it runs out, not before.
func TestNoProbeWaitsForTheSession(t *testing.T) {
	h := newHarnessWith(t, nil)
	ctx := h.ctx()
	h.raft.setLeader(1, 1)
	h.tick()
	for id := int32(1); id <= 2; id++ {
		h.c.Register(ctx, wire.BrokerRegisterRequest{BrokerID: id, Addr: addrOf(id), Incarnation: 1, ControllerEligible: true})
	}
	h.beat(1, 2)
	h.clock.Advance(900 * time.Millisecond)
	h.beat(1)
	h.tick()
	if h.fenced(2) {
		t.Fatal("fenced before its session ran out, without probes")
	}
	h.clock.Advance(200 * time.Millisecond)
	h.beat(1)
	h.tick()
	if !h.fenced(2) {
		t.Fatal("not fenced after its session ran out")
	}
	if fences, probes := h.c.FenceCounts(); fences[fenceSession] != 1 || probes != 0 {
		t.Fatalf("fences %v, probes %d; want 1 for a session, no probes", fences, probes)
	}
}

// The broker of the controller just replaced is most likely dead: its port
// is probed at the first check of the new tenure, and it is fenced then
// if the probe is refused, before the few heartbeats of grace it gets.
func TestProbeThePreviousControllersBrokerAtOnce(t *testing.T) {
	ports := newFakePorts()
	h := prevControllerHarness(t, ports)
	ports.set(addrOf(2), true)
	h.raft.setLeader(1, 2)
	h.tick()
	if !h.c.Active() {
		t.Fatal("node 1 not active")
	}
	h.clock.Advance(time.Millisecond)
	h.probeTick()
	if got := ports.take(); !onlyProbed(got, addrOf(2)) {
		t.Fatalf("probed %v at the first check; want only the previous controller's broker, 2", got)
	}
	if !h.fenced(2) {
		t.Fatal("the previous controller's broker, its port closed, is not fenced at the first check")
	}
	if h.fenced(3) {
		t.Fatal("broker 3 fenced")
	}
}

// The raft follower that becomes the active controller has already found
// the replaced controller's port closed (PortRefused): that broker is
// fenced at the first check, with no probe of its own refused (the dead
// host may have no ICMP error left for this peer). A refusal older than a
// second is not taken.
func TestPortRefusedByRaftFencesThePreviousControllersBroker(t *testing.T) {
	for _, tc := range []struct {
		name string
		age  time.Duration
		want bool
	}{{"fresh", 100 * time.Millisecond, true}, {"stale", 2 * time.Second, false}} {
		t.Run(tc.name, func(t *testing.T) {
			ports := newFakePorts() // every port open
			h := prevControllerHarness(t, ports)
			h.c.PortRefused(2, h.clock.Now().Add(-tc.age))
			h.raft.setLeader(1, 2)
			h.tick()
			h.clock.Advance(time.Millisecond)
			h.probeTick()
			if got := h.fenced(2); got != tc.want {
				t.Fatalf("the previous controller's broker fenced at the first check = %t, want %t", got, tc.want)
			}
			if fences, _ := h.c.FenceCounts(); tc.want && fences[fenceClosedPort] != 1 {
				t.Fatalf("fences %v; want 1 for a closed port", fences)
			}
			if by := h.c.PortClosedCounts(); tc.want && by != [numPortFinders]uint64{foundByRaft: 1} {
				t.Fatalf("port_closed fences by finder %v; want the one by raft", by)
			}
		})
	}
}

// A new tenure that begins on a raft leader change checks at once: the
// replaced controller's broker, whose port this node's raft found closed,
// is fenced without waiting for the next periodic check (no tick here).
func TestPortRefusedByRaftFencesAtTheNewTenuresStart(t *testing.T) {
	h := prevControllerHarness(t, newFakePorts())
	h.c.PortRefused(2, h.clock.Now().Add(-10*time.Millisecond))
	h.raft.setLeader(1, 2)
	waitUntil(t, "the previous controller's broker fenced without a tick", func() bool { return h.fenced(2) })
	if h.fenced(3) {
		t.Fatal("broker 3 fenced")
	}
}

// nextProbe is when the next broker becomes silent for long enough to be
// probed: none for the controller's own broker, one being probed, one whose
// port was found closed, or one already past it (the periodic checks
// probe that one again).
func TestNextProbe(t *testing.T) {
	img := sessionsImage(t) // broker 2, unfenced
	now := time.Unix(1000, 0)
	after := 75 * time.Millisecond
	s := newSessions(time.Second)
	if at := s.nextProbe(img, now, after, 1); !at.IsZero() {
		t.Fatalf("no session yet: %v", at)
	}
	s.touch(2, 1, now)
	want := now.Add(after + time.Millisecond)
	if at := s.nextProbe(img, now, after, 1); !at.Equal(want) {
		t.Fatalf("after a heartbeat: %v, want %v", at, want)
	}
	if at := s.nextProbe(img, now, after, 2); !at.IsZero() {
		t.Fatalf("the controller's own broker: %v", at)
	}
	if at := s.nextProbe(img, want, after, 1); !at.IsZero() {
		t.Fatalf("already silent for long enough: %v", at)
	}
	if got := s.silent(img, want, after, 1); len(got) != 1 {
		t.Fatalf("silent at the time nextProbe gave: %v", got)
	}
	if at := s.nextProbe(img, now, after, 1); !at.IsZero() {
		t.Fatalf("a probe in flight: %v", at)
	}
	s.probed(2, 1, want, portprobe.Closed, want)
	if at := s.nextProbe(img, now, after, 1); !at.IsZero() {
		t.Fatalf("port found closed: %v", at)
	}
}
