package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"paymentlog/bench/localcluster"
	"paymentlog/client"
	"paymentlog/quic"
	"paymentlog/wire"
)

// Event records one fault as it ran.
type Event struct {
	Fault   Fault
	At      time.Duration // since the run started, when the fault hit
	Victim  int32         // 0 if the fault was skipped
	Target  string        // how the victim was chosen ("leader of partition 2", ...)
	Torn    *TornResult   // the torn tail, if one ran (applied only if Torn.Applied())
	Note    string        // fallbacks, skips, slow recoveries
	Healthy time.Duration // from the end of the fault until the cluster was ready again
	// NotApplied: the fault itself failed (the kill, pause or isolation
	// returned an error; Note says which), so it is not counted.
	NotApplied bool
	// Kind is the fault as applied: Fault.Kind, except a kill-leader or
	// kill-controller that fell back to a random node, which is a
	// kill-node. Empty: Fault.Kind.
	Kind Kind
	// Fallback: the fault's target (a leader, the controller) was unknown
	// and a random node was hit instead (Note says why).
	Fallback bool
	// Peer: for a Bridge, the node cut from the victim.
	Peer int32
	// Healed is when the fault was undone (since the run started): the
	// node restarted, resumed, reconnected or its link restored.
	Healed time.Duration
}

func (e Event) String() string {
	s := fmt.Sprintf("t+%-8v %-16s", e.At.Round(time.Millisecond), e.Fault.Kind)
	if e.Fault.Kind == Shrink && !e.skipped() {
		s += fmt.Sprintf(" replication factor %d -> %d for %v", shrinkFrom, shrinkTo, e.Fault.Hold.Round(time.Millisecond))
	}
	if e.Victim > 0 {
		s += fmt.Sprintf(" node %d (%s) for %v", e.Victim, e.Target, e.Fault.Hold.Round(time.Millisecond))
		switch {
		case e.Fault.Kind == OneWay && e.Fault.Dir == localcluster.Outbound:
			s += ", cannot send"
		case e.Fault.Kind == OneWay:
			s += ", cannot receive"
		case e.Fault.Kind == Bridge:
			s += fmt.Sprintf(", cut from node %d", e.Peer)
		case e.Fault.Kind == Degrade && e.Fault.Link != nil:
			s += ", " + e.Fault.Link.String()
		}
	}
	if e.Torn != nil {
		s += "; torn tail " + e.Torn.String()
	}
	if e.Healthy > 0 {
		s += fmt.Sprintf("; ready again after %v", e.Healthy.Round(time.Millisecond))
	}
	if e.NotApplied {
		s += "; NOT APPLIED"
	}
	if e.Fallback {
		s += "; FALLBACK"
	}
	if e.Note != "" {
		s += "; " + e.Note
	}
	return s
}

// Source yields the faults to inject (a *Schedule, or a fixed script).
type Source interface{ Next() Fault }

// Nemesis injects the faults of a Schedule into a local cluster, one at a
// time: each fault is healed (node restarted, resumed or reconnected) and the
// cluster is given time to become ready before the next one.
type Nemesis struct {
	C          *localcluster.Cluster
	NS         *localcluster.NetNS // nil: no network partitions or link faults
	Topic      string
	Partitions int
	Workload   *Workload // for the acknowledged offsets (torn-tail thresholds)
	Start      time.Time
	Out        io.Writer // one line per fault; may be nil
	Logger     *slog.Logger
	// ReadyTimeout bounds the wait for a ready cluster after each fault; default 20s.
	ReadyTimeout time.Duration
	// Admin changes the topic's replication factor (Shrink); nil: Shrink
	// faults are skipped.
	Admin *client.Admin
	// Disks are the nodes' loop disks (DiskStall); nil: disk stalls are
	// skipped.
	Disks *Disks

	ep      *quic.Endpoint
	noteMu  sync.Mutex      // serializes noteExits, which reads node logs outside mu
	logRead map[int32]int64 // under noteMu: how far noteExits read each node's log
	mu      sync.Mutex
	events  []Event
	crashes int        // crashes already noted (in exits)
	exits   []NodeExit // the nodes that stopped on their own (exits, restarts in their process), as noted
	rots    []Rot      // the rot-sealed torn tails applied, in order
	shrunk  bool       // a Shrink fault's replication factor is not restored yet
}

// Rots returns the rot-sealed torn tails applied so far.
func (n *Nemesis) Rots() []Rot {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]Rot(nil), n.rots...)
}

// Exits returns every stop of a node on its own so far, an exit or a
// restart in its process (noted now if it was not yet).
func (n *Nemesis) Exits() []NodeExit {
	n.noteExits()
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]NodeExit(nil), n.exits...)
}

// noteExits adds to exits the crashes the cluster recorded since the last
// call, and the restarts in their process the nodes logged since, and
// returns them, each with the rot it repaired (-1: none, a crash). The
// logs are read after the crashes are taken: a process that restarted
// in it and then exited logged the restart before, so both are noted in
// the same call.
func (n *Nemesis) noteExits() (fresh []NodeExit, repaired []int) {
	n.noteMu.Lock()
	defer n.noteMu.Unlock()
	cr := n.C.Crashes()
	n.mu.Lock()
	noted := n.crashes
	n.mu.Unlock()
	for _, c := range cr[noted:] {
		fresh = append(fresh, nodeExit(c, n.Topic, n.Start)) // reads its log
	}
	fresh = append(fresh, n.readRestarts()...)
	n.mu.Lock()
	defer n.mu.Unlock()
	n.crashes = len(cr)
	n.exits = append(n.exits, fresh...)
	repairedBy, _ := scrubRepairs(n.rots, n.exits)
	repaired = make([]int, len(fresh))
	for i := range repaired {
		repaired[i] = slices.Index(repairedBy, len(n.exits)-len(fresh)+i)
	}
	return fresh, repaired
}

// readRestarts reads what every node logged since the last call and
// returns the restarts in their process it tells of (inProcessRestarts).
// Called under noteMu.
func (n *Nemesis) readRestarts() []NodeExit {
	if n.logRead == nil {
		n.logRead = map[int32]int64{}
	}
	var out []NodeExit
	for _, id := range n.C.IDs() {
		lines, next, err := n.C.LogSince(id, n.logRead[id])
		if err != nil {
			if n.Logger != nil {
				n.Logger.Warn("chaos: reading a node's log for restarts in its process", "node", id, "err", err)
			}
			continue
		}
		n.logRead[id] = next
		out = append(out, inProcessRestarts(id, lines, n.Topic, n.C.Node(id).LogPath, n.Start, time.Now())...)
	}
	return out
}

// unrepairedRot describes a rot that no scrub found yet ("" when none).
func (n *Nemesis) unrepairedRot() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	repairedBy, _ := scrubRepairs(n.rots, n.exits)
	for i, e := range repairedBy {
		if e < 0 {
			r := n.rots[i]
			return fmt.Sprintf("the rot of node %d's partition %d (fault #%d) is not found by its scrub yet", r.Node, r.Partition, r.Fault)
		}
	}
	return ""
}

// Events returns the faults run so far.
func (n *Nemesis) Events() []Event {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]Event(nil), n.events...)
}

// Counts returns how many faults of each kind were injected, by the kind
// applied (a kill-leader or kill-controller that fell back to a random node
// counts as a kill-node; TornTail: torn tails that changed at least one
// byte; skipped faults and faults that could not be applied are not
// counted).
func (n *Nemesis) Counts() map[Kind]int {
	return countFaults(n.Events())
}

// Fallbacks returns, by scheduled kind, how many applied faults hit a
// random node because their target (a leader, the controller) was unknown.
func (n *Nemesis) Fallbacks() map[Kind]int {
	return countFallbacks(n.Events())
}

// applied is the kind of fault the event applied.
func (e Event) applied() Kind {
	if e.Kind != "" {
		return e.Kind
	}
	return e.Fault.Kind
}

// skipped reports whether the fault did not run at all: no victim, or for
// a Shrink (which has none) no start time.
func (e Event) skipped() bool {
	if e.Fault.Kind == Shrink {
		return e.At == 0
	}
	return e.Victim == 0
}

func countFaults(events []Event) map[Kind]int {
	out := map[Kind]int{}
	for _, e := range events {
		if e.skipped() || e.NotApplied {
			continue
		}
		out[e.applied()]++
		if e.Torn != nil && e.Torn.Applied() {
			out[TornTail]++
		}
	}
	return out
}

func countFallbacks(events []Event) map[Kind]int {
	out := map[Kind]int{}
	for _, e := range events {
		if e.Fallback && e.Victim != 0 && !e.NotApplied {
			out[e.Fault.Kind]++
		}
	}
	return out
}

func (n *Nemesis) logf(format string, args ...any) {
	if n.Out != nil {
		fmt.Fprintf(n.Out, format+"\n", args...)
	}
}

// Run injects faults from s until stop reports true (asked before each
// fault with the number run so far) or ctx ends.
func (n *Nemesis) Run(ctx context.Context, s Source, stop func(done int) bool) error {
	if n.Logger == nil {
		n.Logger = slog.New(slog.DiscardHandler)
	}
	n.ReadyTimeout = n.readyTimeout()
	for done := 0; !stop(done) && ctx.Err() == nil; done++ {
		f := s.Next()
		if !wait(ctx, f.Gap) {
			break
		}
		ev := n.inject(ctx, f)
		n.mu.Lock()
		n.events = append(n.events, ev)
		n.mu.Unlock()
		n.logf("%s", ev)
	}
	return ctx.Err()
}

// wait sleeps d unless ctx ends first (false).
func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// inject runs one fault to its end (the victim healed) and waits for a ready cluster.
func (n *Nemesis) inject(ctx context.Context, f Fault) Event {
	if f.Kind == Shrink {
		return n.shrink(ctx, f)
	}
	ch := chooseVictim(f, n.C.IDs(), n.Partitions,
		func(p int32) (int32, error) {
			l, _, err := n.C.PartitionLeader(ctx, n.Topic, p)
			return l, err
		},
		func() (int32, error) { return n.C.ActiveController(ctx) })
	victim := ch.victim
	ev := Event{Fault: f, Kind: ch.kind, Fallback: ch.fallback, Target: ch.target, Note: ch.note}
	if f.Kind.NeedsNetNS() && n.NS == nil {
		ev.Note = "skipped: no network namespaces"
		return ev
	}
	if f.Kind == DiskStall && n.Disks == nil {
		ev.Note = "skipped: the nodes have no loop disks"
		return ev
	}
	if f.Kind == Bridge {
		if ev.Peer = choosePeer(victim, n.C.IDs(), f.PeerPick); ev.Peer == 0 {
			ev.Note = "skipped: no other node to cut the victim from"
			return ev
		}
	}
	if info := n.C.Node(victim); !info.Running {
		ev.Note = fmt.Sprintf("skipped: node %d is not running", victim)
		return ev
	}
	ev.Victim = victim
	ev.At = time.Since(n.Start)
	var err error
	switch f.Kind {
	case KillNode, KillLeader, KillController:
		err = n.kill(ctx, f, victim, &ev)
	case Pause:
		if err = n.C.Pause(victim); err == nil {
			wait(ctx, f.Hold)
			err = n.C.Resume(victim)
		} else {
			ev.NotApplied = true
		}
	case NetPartition:
		if err = n.NS.Isolate(ctx, victim); err == nil {
			wait(ctx, f.Hold)
			err = n.NS.Heal(context.WithoutCancel(ctx), victim)
		} else {
			ev.NotApplied = true
		}
	case OneWay, Bridge, Degrade:
		if err = n.impair(ctx, f, victim, ev.Peer); err == nil {
			wait(ctx, f.Hold)
			err = n.NS.Restore(context.WithoutCancel(ctx), victim)
		} else {
			ev.NotApplied = true
		}
	case DiskStall:
		err = n.diskStall(ctx, f, victim, &ev)
		if n.Disks.Frozen(victim) {
			ev.Note = joinNote(ev.Note, "DISK STILL FROZEN after the fault")
		}
	}
	if err != nil {
		ev.Note = joinNote(ev.Note, "error: "+err.Error())
	}
	healed := time.Now()
	ev.Healed = healed.Sub(n.Start)
	// After a rot, ready includes its repair: the node's scrub found it,
	// the node stopped, and it was started again (by the nemesis after
	// its exit, or in its process).
	rotted := ev.Torn != nil && ev.Torn.Mode == TornRot && ev.Torn.Applied()
	if note := n.waitReadyAfterFault(ctx, rotted); note != "" {
		ev.Note = joinNote(ev.Note, note)
	}
	ev.Healthy = time.Since(healed)
	return ev
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// impair applies a link fault to the victim's link (peer: the node a
// Bridge cuts it from). On error nothing stays applied.
func (n *Nemesis) impair(ctx context.Context, f Fault, victim, peer int32) error {
	switch f.Kind {
	case OneWay:
		return n.NS.OneWay(ctx, victim, f.Dir)
	case Bridge:
		return n.NS.Cut(ctx, victim, peer)
	case Degrade:
		if f.Link == nil {
			return errors.New("chaos: degrade fault without link parameters")
		}
		return n.NS.Degrade(ctx, victim, *f.Link)
	}
	return fmt.Errorf("chaos: %s is not a link fault", f.Kind)
}

// kill SIGKILLs the victim, holds, optionally tears its files, restarts it.
func (n *Nemesis) kill(ctx context.Context, f Fault, victim int32, ev *Event) error {
	led := -1
	if f.Torn != nil && f.Torn.Partition == LedPartition {
		if v, err := n.C.Metadata(ctx, n.Topic); err == nil {
			for p := range n.Partitions {
				if pm, ok := v.Partition(n.Topic, int32(p)); ok && pm.Leader == victim {
					led = p
					break
				}
			}
		}
	}
	if err := n.thawBeforeKill(victim, ev); err != nil {
		ev.NotApplied = true
		return err
	}
	if err := n.C.Kill(victim); err != nil {
		ev.NotApplied = true
		return err
	}
	if f.Torn != nil && f.Torn.Partition == LedPartition {
		t := *f.Torn
		t.Partition = max(led, 0)
		f.Torn = &t
		if led < 0 {
			ev.Note = joinNote(ev.Note, "the victim led no partition: torn tail on partition 0")
		}
	}
	wait(ctx, f.Hold)
	if f.Torn != nil {
		res, note, err := n.tear(ctx, victim, *f.Torn)
		ev.Note = joinNote(ev.Note, note)
		switch {
		case err != nil:
			ev.Note = joinNote(ev.Note, "torn tail failed: "+err.Error())
		case !res.Applied():
			ev.Torn = &res
			ev.Note = joinNote(ev.Note, fmt.Sprintf("torn tail not applied: it changed no byte (%s %d bytes at %d), not counted", res.Action, res.Len, res.Pos))
		default:
			ev.Torn = &res
			if res.Mode == TornRot {
				n.mu.Lock()
				n.rots = append(n.rots, Rot{Node: victim, Partition: int32(res.Partition), Fault: f.N, At: time.Now(), Offset: res.FirstOffset})
				n.mu.Unlock()
			}
		}
	}
	return n.C.StartNode(context.WithoutCancel(ctx), victim)
}

// tear applies a torn tail to the stopped victim. Modes that may touch
// acknowledged data run only when another running node is in the
// partition's ISR (it holds every committed record) and no rot waits for
// its scrub (one damaged replica at a time); otherwise they degrade to
// TornCutUnacked.
func (n *Nemesis) tear(ctx context.Context, victim int32, t Torn) (TornResult, string, error) {
	data := n.Disks.Path(victim, n.C.Node(victim).DataDir)
	if t.Partition == MetadataLog {
		return n.applyTorn(filepath.Join(data, "__cluster_metadata-0"), t, 0)
	}
	note := ""
	if held := n.heldPartition(data, t.Partition); held < 0 {
		return TornResult{}, "", fmt.Errorf("chaos: node %d holds no replica of %s", victim, n.Topic)
	} else if held != t.Partition {
		// More nodes than replicas: the victim holds no copy of this one.
		note = fmt.Sprintf("node %d holds no replica of partition %d: torn tail on partition %d", victim, t.Partition, held)
		t.Partition = held
	}
	if t.Mode == TornCutAcked || t.Mode == TornOverwrite || t.Mode == TornWipe || t.Mode == TornRot {
		ok, why := n.othersInISR(ctx, victim, int32(t.Partition), t.Mode == TornWipe)
		if rot := n.unrepairedRot(); ok && rot != "" {
			ok, why = false, rot
		}
		if !ok {
			note = joinNote(note, fmt.Sprintf("%s downgraded to %s: %s", t.Mode, TornCutUnacked, why))
			t.Mode = TornCutUnacked
		}
	}
	from := n.unackedFrom(ctx, t.Partition)
	res, _, err := n.applyTorn(filepath.Join(data, fmt.Sprintf("%s-%d", n.Topic, t.Partition)), t, from)
	if err == nil && t.Mode == TornRot && res.Mode != TornRot {
		note = joinNote(note, fmt.Sprintf("%s fell back to %s: no sealed segment holds a record", TornRot, res.Mode))
	}
	return res, note, err
}

// heldPartition is p when the node whose data directory is data holds a
// replica of it, else the first partition it does hold, else -1.
func (n *Nemesis) heldPartition(data string, p int) int {
	holds := func(q int) bool {
		_, err := os.Stat(filepath.Join(data, fmt.Sprintf("%s-%d", n.Topic, q)))
		return err == nil
	}
	if holds(p) {
		return p
	}
	for q := range n.Partitions {
		if holds(q) {
			return q
		}
	}
	return -1
}

func (n *Nemesis) applyTorn(dir string, t Torn, from int64) (TornResult, string, error) {
	res, err := ApplyTorn(dir, t, from)
	res.Partition = t.Partition
	return res, "", err
}

// othersInISR reports whether a running node other than victim is in the
// partition's ISR, or (withELR) in its ELR.
func (n *Nemesis) othersInISR(ctx context.Context, victim, p int32, withELR bool) (bool, string) {
	v, err := n.C.Metadata(ctx, n.Topic)
	if err != nil {
		return false, "no metadata: " + err.Error()
	}
	pm, ok := v.Partition(n.Topic, p)
	if !ok {
		return false, "partition unknown"
	}
	holders := pm.ISR
	if withELR {
		holders = append(slices.Clone(pm.ISR), pm.ELR...)
	}
	for _, id := range holders {
		if id != victim && n.C.Node(id).Running && !n.C.Node(id).Paused {
			return true, ""
		}
	}
	if withELR {
		return false, fmt.Sprintf("isr %v and elr %v have no other running member", pm.ISR, pm.ELR)
	}
	return false, fmt.Sprintf("isr %v has no other running member", pm.ISR)
}

// unackedFrom is the first offset of partition p that no acknowledged record
// can occupy: past every offset a producer saw acknowledged and every HW a
// running node reports.
func (n *Nemesis) unackedFrom(ctx context.Context, p int) int64 {
	from := int64(0)
	if n.Workload != nil {
		from = n.Workload.MaxAcked(p) + 1
	}
	for _, id := range n.C.IDs() {
		if info := n.C.Node(id); !info.Running || info.Paused {
			continue
		}
		if r, err := n.DescribeReplica(ctx, id, int32(p)); err == nil {
			from = max(from, r.HighWatermark)
		}
	}
	return from
}

// waitReady waits until a controller is elected, every node is registered
// and alive, and every partition has a leader; with rots, also until no
// rot waits for its node's scrub (the node exited or restarted in its
// process). Nodes that exited meanwhile are restarted (the checker
// reports the crashes among them).
func (n *Nemesis) waitReady(ctx context.Context, rots bool) error {
	return n.waitReadyWithin(ctx, rots, n.ReadyTimeout)
}

// waitReadyWithin is waitReady with a bound of its own.
func (n *Nemesis) waitReadyWithin(ctx context.Context, rots bool, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	return localcluster.Poll(ctx, 50*time.Millisecond, func(ctx context.Context) (bool, error) {
		n.restartCrashed(ctx)
		if rot := n.unrepairedRot(); rots && rot != "" {
			return false, errors.New(rot)
		}
		if ok, err := n.C.Ready(ctx); !ok {
			return false, err
		}
		v, err := n.C.Metadata(ctx, n.Topic)
		if err != nil {
			return false, err
		}
		for p := range n.Partitions {
			pm, ok := v.Partition(n.Topic, int32(p))
			if !ok || pm.Leader < 0 {
				return false, fmt.Errorf("partition %d has no leader", p)
			}
		}
		return true, nil
	})
}

// restartCrashed starts nodes that exited on their own: a scrub's repair
// of a rot, or a crash. A node that started again in its process is only
// reported: it runs.
func (n *Nemesis) restartCrashed(ctx context.Context) {
	fresh, repaired := n.noteExits()
	rots := n.Rots()
	for i, e := range fresh {
		ri := repaired[i]
		switch {
		case ri >= 0 && e.InProcess:
			r := rots[ri]
			n.logf("SCRUB REPAIR node %d restarted in its process at t+%v: its scrub found the rot of partition %d (fault #%d, batch at offset %d)", e.Node, e.At.Sub(n.Start).Round(time.Millisecond), r.Partition, r.Fault, r.Offset)
		case ri >= 0:
			r := rots[ri]
			n.logf("SCRUB REPAIR node %d stopped: its scrub found the rot of partition %d (fault #%d, batch at offset %d); restarting it", e.Node, r.Partition, r.Fault, r.Offset)
		case e.InProcess:
			n.logf("CRASH %s; it runs again in its process", e.Detail)
		default:
			n.logf("CRASH %s; restarting it", e.Detail)
		}
		if e.InProcess {
			continue
		}
		if !n.C.Node(e.Node).Running {
			if err := n.C.StartNode(ctx, e.Node); err != nil {
				n.logf("restart of node %d failed: %v", e.Node, err)
			}
		}
	}
}

// HealAll undoes every fault still in effect: thaws frozen disks (first:
// a node blocked on one could not act on the rest), restores impaired
// links, reconnects isolated nodes, resumes paused ones, starts any that
// are down and gives the topic its replication factor back.
func (n *Nemesis) HealAll(ctx context.Context) error {
	frozen, err := n.Disks.ThawAll()
	if len(frozen) > 0 {
		n.logf("HEAL: the disks of nodes %v were still frozen: thawed", frozen)
	}
	errs := []error{err, n.HealNetwork(ctx)}
	for _, info := range n.C.Nodes() {
		switch {
		case info.Paused:
			errs = append(errs, n.C.Resume(info.ID))
		case !info.Running:
			errs = append(errs, n.C.StartNode(ctx, info.ID))
		}
	}
	errs = append(errs, n.restoreReplicas(ctx))
	return errors.Join(errs...)
}

// HealNetwork restores every impaired link and reconnects every isolated
// node (the part of HealAll that a cancelled run still owes the machine).
func (n *Nemesis) HealNetwork(ctx context.Context) error {
	if n.NS == nil {
		return nil
	}
	var errs []error
	for _, id := range n.NS.Impaired() {
		errs = append(errs, n.NS.Restore(ctx, id))
	}
	for _, id := range n.NS.Isolated() {
		errs = append(errs, n.NS.Heal(ctx, id))
	}
	return errors.Join(errs...)
}

// endpoint returns the nemesis's own client endpoint (for DescribeReplica).
func (n *Nemesis) endpoint(ctx context.Context) (*quic.Endpoint, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ep != nil {
		return n.ep, nil
	}
	ep, err := quic.New(ctx, quic.Config{TLS: n.C.ClientTLS(), Logger: n.Logger})
	if err != nil {
		return nil, err
	}
	n.ep = ep
	return ep, nil
}

// DescribeReplica asks node id for its replica of partition p.
func (n *Nemesis) DescribeReplica(ctx context.Context, id, p int32) (*wire.DescribeReplicaResponse, error) {
	ep, err := n.endpoint(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var resp wire.DescribeReplicaResponse
	if err := ep.Call(quic.Idempotent(ctx), n.C.Node(id).Addr, wire.TypeDescribeReplica, &wire.DescribeReplicaRequest{Topic: n.Topic, Partition: p}, &resp); err != nil {
		return nil, err
	}
	if resp.Err != wire.None {
		return nil, resp.Err.Err("")
	}
	return &resp, nil
}

// Close shuts the nemesis's endpoint down.
func (n *Nemesis) Close() {
	n.mu.Lock()
	ep := n.ep
	n.ep = nil
	n.mu.Unlock()
	if ep != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		ep.Shutdown(ctx)
		cancel()
	}
}
