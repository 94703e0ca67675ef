package chaos

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"paymentlog/bench/localcluster"
)

// Kind is a kind of fault the nemesis injects.
type Kind string

// Fault kinds. TornTail is never scheduled alone: it rides on a kill
// (Fault.Torn) and is applied to the dead node's files before its restart.
const (
	KillNode       Kind = "kill-node"       // SIGKILL a random node, restart it after Hold
	KillLeader     Kind = "kill-leader"     // SIGKILL the leader of a random partition
	KillController Kind = "kill-controller" // SIGKILL the active controller
	Pause          Kind = "pause"           // SIGSTOP a random node for Hold (> session timeout), then SIGCONT
	NetPartition   Kind = "partition"       // isolate a random node (its link down) for Hold, then heal
	TornTail       Kind = "torn-tail"       // damage a killed node's files before restart (the last segment's end; rot-sealed: a sealed segment)

	// Link faults (tc in the node's namespace, see localcluster.NetNS).
	OneWay  Kind = "one-way" // a node's packets in one direction (Fault.Dir) are dropped for Hold
	Bridge  Kind = "bridge"  // a node and one peer lose each other for Hold; both still reach the third
	Degrade Kind = "degrade" // a node's link loses, duplicates, delays and reorders packets (Fault.Link) for Hold

	// Shrink lowers the topic's replication factor to 2 for Hold, then
	// raises it back to 3: each partition drops a replica (out of the ISR
	// first, never the leader) and later copies its whole log onto that
	// broker again, while writes go on and the next faults come.
	Shrink Kind = "shrink"

	// DiskStall freezes a node's file system (fsfreeze, on the loop disk
	// the run gives every node; see Disks) for Hold, then thaws it: every
	// write, fsync and msync of the node blocks while its process runs on
	// (a gray failure, as a SAN or cloud volume outage). Hold is longer
	// than the session timeout and the nodes' --disk-stall-timeout.
	DiskStall Kind = "disk-stall"
)

// AllKinds lists the kinds a run schedules by default ("all"), in report
// order. The link faults (NetKinds) are not among them: they run only when
// asked for, so the default mix, and e2e's TestChaos with it, keeps its
// length.
var AllKinds = []Kind{KillNode, KillLeader, KillController, Pause, NetPartition, TornTail}

// NetKinds are the link faults short of a partition ("net" in ParseKinds).
var NetKinds = []Kind{OneWay, Bridge, Degrade}

// KnownKinds is every kind, in report order. Shrink and DiskStall, like
// the link faults, run only when asked for by name.
var KnownKinds = append(append(append([]Kind(nil), AllKinds...), NetKinds...), Shrink, DiskStall)

// IsKill reports whether the kind kills a process (and may carry a torn tail).
func (k Kind) IsKill() bool { return k == KillNode || k == KillLeader || k == KillController }

// NeedsNetNS reports whether the kind needs the nodes in network namespaces.
func (k Kind) NeedsNetNS() bool { return k == NetPartition || k.IsLink() }

// IsLink reports whether the kind is a tc link fault (NetKinds).
func (k Kind) IsLink() bool { return k == OneWay || k == Bridge || k == Degrade }

// ParseKinds parses a comma-separated list of kinds: "all" (or "") for
// AllKinds, "net" for NetKinds, or names of KnownKinds, in any mix.
func ParseKinds(s string) ([]Kind, error) {
	if s == "" || s == "all" {
		return append([]Kind(nil), AllKinds...), nil
	}
	var out []Kind
	for _, f := range strings.Split(s, ",") {
		k := Kind(strings.TrimSpace(f))
		switch {
		case k == "all":
			out = append(out, AllKinds...)
		case k == "net":
			out = append(out, NetKinds...)
		case slices.Contains(KnownKinds, k):
			out = append(out, k)
		default:
			return nil, fmt.Errorf("chaos: unknown fault kind %q (known: %v, all, net)", k, KnownKinds)
		}
	}
	return slices.Compact(out), nil
}

// TornMode says how a torn tail damages a segment. See the package
// documentation for which modes may touch acknowledged data and why.
type TornMode string

const (
	// TornCutUnacked truncates the file at a random byte inside the data that
	// no acknowledged record lives in (the realistic torn write: bytes not
	// yet flushed when the power went). Without such data it degrades to
	// TornGarbage.
	TornCutUnacked TornMode = "cut-unacked"
	// TornGarbage writes a partial, garbage batch right after the last whole
	// batch (a write torn before its first byte was acknowledged).
	TornGarbage TornMode = "garbage-tail"
	// TornCutAcked truncates at a random byte of the last segment's data,
	// acknowledged or not: one replica's disk loses data it had flushed.
	// Only applied when another running ISR member holds every committed
	// record of the partition; otherwise it degrades to TornCutUnacked.
	TornCutAcked TornMode = "cut-acked"
	// TornOverwrite overwrites the last bytes of the data with garbage (a
	// corrupted sector). Same precondition and fallback as TornCutAcked.
	TornOverwrite TornMode = "overwrite"
	// TornRot flips 1–8 bytes (XOR with a nonzero byte) at random
	// positions inside the records of a random batch of a random sealed
	// segment (any but the last): silent corruption on a disk (bit rot, a
	// bad sector) in data the node trusts at open, which only its scrubber
	// (--log-scrub-interval) finds. The node must stop when its scrub
	// meets the batch, and its next start truncate there and fetch the
	// rest again. Same precondition and fallback as TornCutAcked; a
	// partition without a sealed segment holding records gets a
	// TornOverwrite instead.
	TornRot TornMode = "rot-sealed"
	// TornWipe removes the partition's whole directory (a directory lost
	// or replaced; the rest of the data directory, its incarnation file
	// included, stays): the node restarts holding nothing of the
	// partition, and its registration says so (EmptyReplicas). Applied
	// only when another running node is in the partition's ISR or ELR
	// (the victim may be the ISR's last member); otherwise it degrades to
	// TornCutUnacked.
	TornWipe TornMode = "wipe"
)

// Special Torn.Partition values.
const (
	MetadataLog  = -1 // the metadata raft log (__cluster_metadata-0)
	LedPartition = -2 // a partition the victim led when it was killed (partition 0 if none)
)

// Torn describes a torn tail.
type Torn struct {
	Mode      TornMode
	Partition int     // the topic partition whose last segment is damaged; MetadataLog, or LedPartition
	Frac      float64 // in [0,1): where in the eligible region the damage starts
	Len       int     // garbage / overwrite length in bytes (1..64)
	Seed      uint64  // seeds the garbage bytes
}

func (t *Torn) String() string {
	target := fmt.Sprintf("partition %d", t.Partition)
	switch t.Partition {
	case MetadataLog:
		target = "metadata log"
	case LedPartition:
		target = "a partition it led"
	}
	return fmt.Sprintf("%s of %s at %.3f len %d", t.Mode, target, t.Frac, t.Len)
}

// Target chooses the victim of a pause or a network partition.
type Target string

const (
	TargetRandom     Target = ""           // node Pick%nodes+1
	TargetController Target = "controller" // the active controller
	TargetLeader     Target = "leader"     // the leader of partition Pick%partitions
)

// Fault is one scheduled fault. The schedule fixes the kind, the victim
// choice and the timings; which node that choice hits (the leader of
// partition Pick%P, the active controller) is resolved when it runs.
type Fault struct {
	N    int  // 1-based position in the schedule
	Kind Kind // never TornTail (see Torn)
	Pick int  // chooses the victim: node Pick%nodes+1, or partition Pick%partitions for KillLeader
	// Target: for Pause, NetPartition, DiskStall and the link faults, whom to hit
	// (kills name it in their kind).
	Target Target
	Gap    time.Duration // quiet time before the fault
	Hold   time.Duration // how long the node stays dead / paused / isolated / impaired
	Torn   *Torn         // kills only: damage the node's files before the restart
	// Dir: for OneWay, the direction dropped (Outbound: the node cannot
	// send; Inbound: it cannot receive).
	Dir localcluster.Direction
	// PeerPick: for Bridge, chooses the peer cut from the victim among the
	// other nodes (PeerPick%(nodes-1), in id order).
	PeerPick int
	Link     *localcluster.LinkQuality // for Degrade
}

func (f Fault) String() string {
	s := fmt.Sprintf("#%d %s pick=%d gap=%v hold=%v", f.N, f.Kind, f.Pick, f.Gap.Round(time.Millisecond), f.Hold.Round(time.Millisecond))
	if f.Target != TargetRandom {
		s += " target=" + string(f.Target)
	}
	if f.Torn != nil {
		s += " torn=" + f.Torn.String()
	}
	if f.Dir != "" {
		s += " dir=" + string(f.Dir)
	}
	if f.Kind == Bridge {
		s += fmt.Sprintf(" peer-pick=%d", f.PeerPick)
	}
	if f.Link != nil {
		s += " link=" + f.Link.String()
	}
	return s
}

// Range is a closed duration interval.
type Range struct{ Min, Max time.Duration }

func (r Range) pick(rng *rand.Rand) time.Duration {
	if r.Max <= r.Min {
		return r.Min
	}
	return r.Min + time.Duration(rng.Int64N(int64(r.Max-r.Min)+1))
}

// Plan configures a Schedule. Zero fields take the defaults in their comments.
type Plan struct {
	Seed  int64
	Kinds []Kind // default AllKinds
	// PerKind: each deck holds every scheduled kind this many times, and
	// this many of its kills carry a torn tail; default 20.
	PerKind        int
	Nodes          int           // default 3
	Partitions     int           // default 3
	SessionTimeout time.Duration // the nodes' --session-timeout; default 1s
	Gap            Range         // default 50ms..500ms
	KillHold       Range         // default 50ms..800ms
	PauseHold      Range         // default 1.2..2.2 × SessionTimeout
	PartitionHold  Range         // default 0.5..2.5 × SessionTimeout; also OneWay and Bridge
	DegradeHold    Range         // default 2..6 × SessionTimeout
	// DiskStallTimeout is the nodes' --disk-stall-timeout (0: they have
	// none); DiskStallHold defaults to S+SessionTimeout..S+3×SessionTimeout
	// with S the larger of the two, so that a stall outlasts both.
	DiskStallTimeout time.Duration
	DiskStallHold    Range
	// MetadataTorn is the share of torn tails aimed at the metadata log
	// (always TornGarbage there); default 0.15.
	MetadataTorn float64
}

func (p Plan) withDefaults() Plan {
	if len(p.Kinds) == 0 {
		p.Kinds = append([]Kind(nil), AllKinds...)
	}
	if p.PerKind <= 0 {
		p.PerKind = 20
	}
	if p.Nodes <= 0 {
		p.Nodes = 3
	}
	if p.Partitions <= 0 {
		p.Partitions = 3
	}
	if p.SessionTimeout <= 0 {
		p.SessionTimeout = time.Second
	}
	if p.Gap == (Range{}) {
		p.Gap = Range{50 * time.Millisecond, 500 * time.Millisecond}
	}
	if p.KillHold == (Range{}) {
		p.KillHold = Range{50 * time.Millisecond, 800 * time.Millisecond}
	}
	st := p.SessionTimeout
	if p.PauseHold == (Range{}) {
		p.PauseHold = Range{st * 12 / 10, st * 22 / 10}
	}
	if p.PartitionHold == (Range{}) {
		p.PartitionHold = Range{st / 2, st * 5 / 2}
	}
	if p.DegradeHold == (Range{}) {
		p.DegradeHold = Range{st * 2, st * 6}
	}
	if p.DiskStallHold == (Range{}) {
		s := max(st, p.DiskStallTimeout)
		p.DiskStallHold = Range{s + st, s + 3*st}
	}
	if p.MetadataTorn == 0 {
		p.MetadataTorn = 0.15
	}
	return p
}

// Schedule is a deterministic stream of faults drawn from a seed: the same
// Plan yields the same faults, so a failing seed replays its schedule. It is
// made of decks; each deck holds every scheduled kind PerKind times (torn
// tails on PerKind of its kills) in a seeded random order.
type Schedule struct {
	plan  Plan
	rng   *rand.Rand
	deck  []Fault
	n     int
	kinds []Kind // scheduled kinds (TornTail removed)
	torn  bool
}

// NewSchedule returns the schedule of p.
func NewSchedule(p Plan) *Schedule {
	p = p.withDefaults()
	s := &Schedule{plan: p, rng: rand.New(rand.NewPCG(uint64(p.Seed), 0x70617974))}
	for _, k := range p.Kinds {
		if k == TornTail {
			s.torn = true
			continue
		}
		s.kinds = append(s.kinds, k)
	}
	return s
}

// Plan returns the plan with defaults applied.
func (s *Schedule) Plan() Plan { return s.plan }

// DeckSize is the number of faults in one deck.
func (s *Schedule) DeckSize() int { return len(s.kinds) * s.plan.PerKind }

// Next returns the next fault.
func (s *Schedule) Next() Fault {
	if len(s.deck) == 0 {
		s.deal()
	}
	f := s.deck[0]
	s.deck = s.deck[1:]
	s.n++
	f.N = s.n
	return f
}

// Take returns the next n faults.
func (s *Schedule) Take(n int) []Fault {
	out := make([]Fault, n)
	for i := range out {
		out[i] = s.Next()
	}
	return out
}

func (s *Schedule) deal() {
	p, rng := s.plan, s.rng
	var deck []Fault
	var kills []int
	for _, k := range s.kinds {
		for range p.PerKind {
			f := Fault{Kind: k, Pick: rng.IntN(1 << 30), Gap: p.Gap.pick(rng)}
			switch {
			case k.IsKill():
				f.Hold = p.KillHold.pick(rng)
				kills = append(kills, len(deck))
			case k == Pause:
				f.Hold = p.PauseHold.pick(rng)
				f.Target = []Target{TargetRandom, TargetController, TargetLeader}[rng.IntN(3)]
			case k == NetPartition:
				f.Hold = p.PartitionHold.pick(rng)
				f.Target = []Target{TargetRandom, TargetController, TargetLeader}[rng.IntN(3)]
			case k.IsLink():
				s.link(&f)
			case k == Shrink:
				f.Hold = p.PartitionHold.pick(rng)
			case k == DiskStall:
				// Drawn only for disk stalls: the schedules of seeds
				// without them are what they always were.
				f.Hold = p.DiskStallHold.pick(rng)
				f.Target = []Target{TargetRandom, TargetController, TargetLeader}[rng.IntN(3)]
			}
			deck = append(deck, f)
		}
	}
	if s.torn && len(kills) > 0 {
		rng.Shuffle(len(kills), func(i, j int) { kills[i], kills[j] = kills[j], kills[i] })
		for i := 0; i < p.PerKind; i++ {
			deck[kills[i%len(kills)]].Torn = s.torn1()
		}
	}
	rng.Shuffle(len(deck), func(i, j int) { deck[i], deck[j] = deck[j], deck[i] })
	s.deck = deck
}

func (s *Schedule) torn1() *Torn {
	rng := s.rng
	t := &Torn{Frac: rng.Float64(), Len: 1 + rng.IntN(64), Seed: rng.Uint64(), Partition: rng.IntN(s.plan.Partitions)}
	if rng.Float64() < s.plan.MetadataTorn {
		t.Partition, t.Mode = MetadataLog, TornGarbage
		return t
	}
	if rng.Float64() < 0.4 {
		t.Partition = LedPartition
	}
	switch x := rng.Float64(); {
	case x < 0.3:
		t.Mode = TornCutUnacked
	case x < 0.4:
		t.Mode = TornGarbage
	case x < 0.6:
		t.Mode = TornCutAcked
		if t.Seed%3 == 0 {
			// A third of them wipe the directory instead, decided from
			// the seed already drawn (the generator's draws stayed what
			// they were before wipes existed).
			t.Mode = TornWipe
		}
	case x < 0.75:
		t.Mode = TornOverwrite
	default:
		t.Mode = TornRot
	}
	return t
}

// link fills in a link fault's hold, target and parameters. It draws from
// the schedule's generator only for link kinds, so the schedules of seeds
// without them are what they always were.
func (s *Schedule) link(f *Fault) {
	p, rng := s.plan, s.rng
	f.Target = []Target{TargetRandom, TargetController, TargetLeader}[rng.IntN(3)]
	switch f.Kind {
	case OneWay:
		f.Hold = p.PartitionHold.pick(rng)
		f.Dir = []localcluster.Direction{localcluster.Outbound, localcluster.Inbound}[rng.IntN(2)]
	case Bridge:
		f.Hold = p.PartitionHold.pick(rng)
		f.PeerPick = rng.IntN(1 << 30)
	case Degrade:
		f.Hold = p.DegradeHold.pick(rng)
		f.Link = degradedLink(rng)
	}
}

// degradedLink draws a degraded link: 5–30% loss each way, up to 5%
// duplication, up to 25% of the packets overtaking a queue of 1–6 Mbit/s
// that holds a packet for at most 20–200ms. A node's replication traffic
// under the chaos workload is about 1–2 Mbit/s each way, so the slower
// queues fill up to their bound (delay, jitter and drops) and the faster
// ones delay only bursts. (With 2–16 Mbit/s, 18% of a node's outgoing
// packets waited at all, and none was dropped.)
func degradedLink(rng *rand.Rand) *localcluster.LinkQuality {
	return &localcluster.LinkQuality{
		Loss:      0.05 + 0.25*rng.Float64(),
		Duplicate: 0.05 * rng.Float64(),
		Reorder:   0.25 * rng.Float64(),
		RateBits:  int64(1_000_000 + rng.IntN(5_000_001)),
		Latency:   time.Duration(20+rng.IntN(181)) * time.Millisecond,
	}
}
