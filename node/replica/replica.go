package replica

import (
	"fmt"
	"slices"
	"time"
)

// Role of a replica.
type Role uint8

const (
	RoleNone     Role = iota // not serving: offline, stopped or not yet assigned
	RoleLeader               // takes writes and serves fetches
	RoleFollower             // copies its leader
)

func (r Role) String() string {
	switch r {
	case RoleLeader:
		return "leader"
	case RoleFollower:
		return "follower"
	}
	return "none"
}

// Config is fixed for the replica's life.
type Config struct {
	ID      int32         // this broker's id
	LagTime time.Duration // a follower not caught up for longer is proposed for removal from the ISR
	// TrackDurable says the leader's appends become durable later, as
	// LocalDurable reports: the leader then counts itself toward the HW
	// only up to its durable end, so that the HW (what consumers see) never
	// covers records a crash of the leader could take back, even while
	// the leader is the only member of the ISR. Without it every append
	// counts as durable at once.
	TrackDurable bool
	// Eligible, when set, says whether the leader's metadata shows broker
	// id registered with incarnation inc (the one its fetches came from),
	// neither fenced nor shutting down: the controller refuses to add any
	// other to the ISR (IneligibleReplica), so the leader does not propose
	// it (Kafka's KIP-841). A restarted follower catches up before its
	// registration is unfenced; proposed then, it was refused and held back
	// a retry back-off, adding 100 ms to its return. The caller has the
	// leader tick (Tick) when a broker becomes eligible. Nil: every
	// follower is eligible.
	Eligible func(id int32, inc int64) bool
}

// State is a partition's state from the metadata image.
type State struct {
	Leader         int32 // -1 while offline
	LeaderEpoch    int32
	PartitionEpoch int32
	Replicas       []int32
	ISR            []int32
	MinISR         int32
}

// Replica is one partition replica. It is not safe for concurrent use: the
// broker serialises calls under its partition lock.
type Replica struct {
	cfg Config

	role           Role
	leader         int32 // -1 when unknown
	leaderEpoch    int32 // Invariant: never decreases
	partitionEpoch int32 // Invariant: never decreases
	replicas       []int32
	// isr is the committed ISR, as last seen in metadata or an AlterPartition answer.
	isr []int32
	// pending is an ISR change proposed to the controller and not yet
	// committed or refused; nil when none. Invariant: non-nil only when leader.
	pending []int32
	// pendingInc holds, for the followers in pending, the incarnation whose
	// fetches the proposal was based on (see PendingMembers). Meaningful
	// only while pending is non-nil.
	pendingInc map[int32]int64
	// refusals counts the ISR expansions the controller refused
	// (ProposalFailed); each refused follower keeps the count it was
	// refused at, so the tick retries the least recently refused first.
	refusals uint64
	minISR   int

	// Invariant: logStart <= hw <= leo.
	logStart, hw, leo int64
	// durable is the end of the local log's durable prefix as reported
	// (LocalAppend on a follower, LocalDurable on the leader); the leader
	// counts itself toward the HW up to it. Equal to leo unless
	// cfg.TrackDurable. Invariant: logStart <= durable <= leo.
	durable int64
	// epochStart is the LEO at the moment this replica became leader of
	// leaderEpoch (the start offset of its epoch); a follower re-enters the
	// ISR only once it has reached it, and while hw < epochStart the HW is
	// not handed out as an end offset (HWBelowEpochStart).
	epochStart int64
	// leaderSince is the leader epoch in which this replica's current,
	// uninterrupted leadership began (-1 when not leader). A batch appended
	// in an earlier epoch was appended in an earlier leadership: the log
	// may have been truncated and rewritten since, so the HW passing its
	// offsets says nothing about it. Invariant: leaderSince <= leaderEpoch.
	leaderSince int32
	// followers holds the leader's view of each other replica. Invariant:
	// non-nil exactly when leader.
	followers map[int32]*progress
	// parked produce requests waiting for the HW, ordered by required offset.
	// Invariant: empty unless leader; every entry's required offset > hw.
	parked []parkedProduce
}

type parkedProduce struct {
	id       uint64
	required int64 // the HW must reach this (the batch's last offset + 1)
	deadline time.Time
}

// New returns a replica in RoleNone over a log spanning [logStart, leo) with a
// checkpointed high watermark hw (clamped into range).
func New(cfg Config, logStart, leo, hw int64) *Replica {
	if leo < logStart {
		panic(fmt.Sprintf("replica: leo %d < log start %d", leo, logStart))
	}
	return &Replica{cfg: cfg, leader: -1, leaderEpoch: -1, partitionEpoch: -1, leaderSince: -1,
		logStart: logStart, leo: leo, durable: leo, hw: min(max(hw, logStart), leo)}
}

// Accessors.
func (r *Replica) ID() int32             { return r.cfg.ID }
func (r *Replica) Role() Role            { return r.role }
func (r *Replica) Leader() int32         { return r.leader }
func (r *Replica) LeaderEpoch() int32    { return r.leaderEpoch }
func (r *Replica) PartitionEpoch() int32 { return r.partitionEpoch }
func (r *Replica) Replicas() []int32     { return slices.Clone(r.replicas) }
func (r *Replica) ISR() []int32          { return slices.Clone(r.isr) }
func (r *Replica) PendingISR() []int32   { return slices.Clone(r.pending) }
func (r *Replica) MinISR() int           { return r.minISR }
func (r *Replica) HW() int64             { return r.hw }
func (r *Replica) LEO() int64            { return r.leo }
func (r *Replica) LogStart() int64       { return r.logStart }
func (r *Replica) EpochStart() int64     { return r.epochStart }
func (r *Replica) Parked() int           { return len(r.parked) }

// HWBelowEpochStart reports whether this replica leads with an HW still
// below the start offset of its leader epoch (KIP-207). A new leader starts
// with the HW it learnt as a follower, which may lag the one its predecessor
// had made visible (at most epochStart: every record below it was in the
// ISR's logs, ours included); the HW reaches epochStart once the followers
// have fetched from it. Until then the HW is not an end offset to hand out:
// consumers may already have read past it.
func (r *Replica) HWBelowEpochStart() bool {
	return r.role == RoleLeader && r.hw < r.epochStart
}

// Member is an ISR member with the incarnation of the follower process the
// leader judged by (0 when unknown, and for the leader itself).
type Member struct {
	ID          int32
	Incarnation int64
}

// PendingMembers is the pending ISR change with, for each follower, the
// incarnation whose fetches it was proposed on (KIP-903): the controller
// admits a new member only while that is its registered incarnation. Nil
// when nothing is pending. Send it with the AlterPartition for the change.
func (r *Replica) PendingMembers() []Member {
	if r.pending == nil {
		return nil
	}
	out := make([]Member, 0, len(r.pending))
	for _, id := range r.pending {
		out = append(out, Member{ID: id, Incarnation: r.pendingInc[id]})
	}
	return out
}

// FollowerIncarnation is the incarnation of follower id whose fetches the
// leader records now (0 if unknown).
func (r *Replica) FollowerIncarnation(id int32) int64 {
	if p := r.followers[id]; p != nil {
		return p.incarnation
	}
	return 0
}

// FollowerLEO is the leader's view of follower id's LEO (-1 if unknown).
func (r *Replica) FollowerLEO(id int32) int64 {
	if p := r.followers[id]; p != nil {
		return p.leo
	}
	return -1
}

// Transition says what Apply did.
type Transition uint8

const (
	Unchanged    Transition = iota // same state, or stale metadata ignored
	Updated                        // same role and leader epoch, new ISR or partition epoch
	ToLeader                       // became leader (or leader in a new epoch)
	ToFollower                     // became follower (or of a new leader / epoch)
	Stopped                        // no longer a replica, or the partition is offline
	StaleIgnored                   // metadata older than what we have
)

// Apply dispatches a metadata state to BecomeLeader, BecomeFollower, Stop or
// ISRCommitted. leo is the local log end offset (used when becoming leader).
func (r *Replica) Apply(st State, leo int64, now time.Time) (Transition, Decisions) {
	if st.LeaderEpoch < r.leaderEpoch ||
		(st.LeaderEpoch == r.leaderEpoch && st.PartitionEpoch < r.partitionEpoch) {
		return StaleIgnored, r.decisions()
	}
	if !slices.Contains(st.Replicas, r.cfg.ID) || st.Leader < 0 {
		if r.role == RoleNone && st.LeaderEpoch == r.leaderEpoch {
			r.setState(st)
			return Unchanged, r.decisions()
		}
		d := r.Stop()
		r.setState(st)
		return Stopped, d
	}
	sameEpoch := st.LeaderEpoch == r.leaderEpoch
	if st.Leader == r.cfg.ID {
		if r.role == RoleLeader && sameEpoch {
			r.minISR = int(st.MinISR)
			r.replicas = slices.Clone(st.Replicas)
			for id := range r.followers {
				if !slices.Contains(r.replicas, id) {
					delete(r.followers, id) // removed by a reassignment
				}
			}
			if st.PartitionEpoch == r.partitionEpoch {
				d := r.maybeAdvanceHW()                                   // a lowered minimum ISR
				d.Complete = append(d.Complete, r.answerUnderMinISR()...) // a raised one
				return Unchanged, d
			}
			return Updated, r.ISRCommitted(st.ISR, st.PartitionEpoch, now)
		}
		return ToLeader, r.BecomeLeader(st, leo, now)
	}
	if r.role == RoleFollower && sameEpoch && r.leader == st.Leader {
		changed := st.PartitionEpoch != r.partitionEpoch
		r.setState(st)
		if changed {
			return Updated, r.decisions()
		}
		return Unchanged, r.decisions()
	}
	return ToFollower, r.BecomeFollower(st)
}

func (r *Replica) setState(st State) {
	r.leader = st.Leader
	r.leaderEpoch = max(r.leaderEpoch, st.LeaderEpoch)
	r.partitionEpoch = max(r.partitionEpoch, st.PartitionEpoch)
	r.replicas = slices.Clone(st.Replicas)
	r.isr = slices.Clone(st.ISR)
	r.minISR = int(st.MinISR)
}

// BecomeLeader makes this replica the leader of st.LeaderEpoch with local log
// end offset leo. Writes may be accepted only after it returns. Parked
// requests of an earlier epoch of this same leader stay parked: the log below
// leo is unchanged, so they complete when the HW passes them. With
// TrackDurable, the log is durable only up to what was reported durable
// before (a follower's last LocalAppend): records the fetcher appended
// beyond it count once LocalDurable says so.
func (r *Replica) BecomeLeader(st State, leo int64, now time.Time) Decisions {
	if st.LeaderEpoch < r.leaderEpoch {
		panic(fmt.Sprintf("replica: BecomeLeader epoch %d < current %d", st.LeaderEpoch, r.leaderEpoch))
	}
	var d Decisions
	if r.role != RoleLeader {
		d.Complete = r.failParked(NotLeader)
		r.leaderSince = st.LeaderEpoch
	}
	r.setState(st)
	r.role = RoleLeader
	r.pending = nil
	r.leo = leo
	if r.cfg.TrackDurable {
		r.durable = min(r.durable, leo)
	} else {
		r.durable = leo
	}
	r.hw = min(r.hw, leo)
	r.epochStart = leo
	r.followers = make(map[int32]*progress, len(st.Replicas))
	for _, id := range st.Replicas {
		if id == r.cfg.ID {
			continue
		}
		p := &progress{leo: -1, lastFetchLeaderLEO: -1}
		if slices.Contains(st.ISR, id) {
			p.lastCaughtUp = now
		}
		r.followers[id] = p
	}
	d.merge(r.maybeAdvanceHW())
	d.Complete = append(d.Complete, r.answerUnderMinISR()...)
	d.WakeFetchers = true
	d.HW = r.hw
	return d
}

// BecomeFollower makes this replica a follower of st.Leader. Parked produce
// requests fail with NotLeader. The caller starts fetching; the first fetch
// response tells it where to truncate (never the HW: KIP-101).
func (r *Replica) BecomeFollower(st State) Decisions {
	d := Decisions{Complete: r.failParked(NotLeader), WakeFetchers: true}
	r.setState(st)
	r.role = RoleFollower
	r.leaderSince = -1
	r.pending = nil
	r.followers = nil
	d.HW = r.hw
	return d
}

// Stop makes the replica serve nothing; parked requests fail with NotLeader.
func (r *Replica) Stop() Decisions {
	d := Decisions{Complete: r.failParked(NotLeader), WakeFetchers: true}
	r.role = RoleNone
	r.leaderSince = -1
	r.pending = nil
	r.followers = nil
	d.HW = r.hw
	return d
}

// ISRCommitted records a committed ISR at partitionEpoch (from metadata or an
// AlterPartition answer). Older partition epochs are ignored.
func (r *Replica) ISRCommitted(isr []int32, partitionEpoch int32, now time.Time) Decisions {
	if partitionEpoch <= r.partitionEpoch {
		return r.decisions()
	}
	for _, id := range isr {
		if p := r.followers[id]; p != nil && !slices.Contains(r.isr, id) {
			p.lastCaughtUp = later(p.lastCaughtUp, now)
		}
	}
	r.isr = slices.Clone(isr)
	r.partitionEpoch = partitionEpoch
	r.pending = nil
	d := r.maybeAdvanceHW()
	d.Complete = append(d.Complete, r.answerUnderMinISR()...)
	d.HW = r.hw
	return d
}

// ProposalFailed clears a pending ISR change the controller refused or that
// could not be sent; a later Tick or fetch proposes again if still needed.
// While the change was pending the HW counted the larger of the two sets; it
// is computed again over the committed ISR alone, which may let it advance
// (a refused expansion must not hold the HW until some unrelated event).
func (r *Replica) ProposalFailed() Decisions {
	r.refusals++
	for _, id := range r.pending {
		if f := r.followers[id]; f != nil && id != r.cfg.ID && !slices.Contains(r.isr, id) {
			f.refusedAsOf, f.refusal = f.lastFetch, r.refusals
		}
	}
	r.pending = nil
	if r.role != RoleLeader {
		return r.decisions()
	}
	d := r.maybeAdvanceHW()
	d.Complete = append(d.Complete, r.answerUnderMinISR()...)
	d.HW = r.hw
	return d
}

// LocalAppend records the local log end offset after an append (leader or
// follower). A follower reports only durable ends (they are what the leader
// counts toward its HW); with TrackDurable the leader's appends count toward
// the HW once LocalDurable reports them.
func (r *Replica) LocalAppend(leo int64) Decisions {
	if leo < r.leo {
		panic(fmt.Sprintf("replica: LocalAppend leo %d < %d (use Truncated)", leo, r.leo))
	}
	r.leo = leo
	if !r.cfg.TrackDurable || r.role != RoleLeader {
		r.durable = leo
	}
	if r.role != RoleLeader {
		return r.decisions()
	}
	d := r.maybeAdvanceHW()
	d.WakeFetchers = true
	d.HW = r.hw
	return d
}

// LocalDurable records that the leader's log is durable below off, as
// checked after an append in its leadership of epoch: nothing is recorded
// unless it has led without a break since then (its log may have been
// truncated and rewritten since). It may advance the HW.
func (r *Replica) LocalDurable(epoch int32, off int64) Decisions {
	if r.CheckLeadership(epoch) != OK || off <= r.durable {
		return r.decisions()
	}
	r.durable = min(off, r.leo)
	return r.maybeAdvanceHW()
}

// Durable is the end of the local log's durable prefix as last reported.
func (r *Replica) Durable() int64 { return r.durable }

// Truncated records that a follower's log now spans [logStart, leo) after a
// truncation (divergence) or a restart at the leader's log start.
func (r *Replica) Truncated(logStart, leo int64) {
	if r.role == RoleLeader {
		panic("replica: a leader never truncates")
	}
	r.logStart, r.leo = logStart, leo
	r.durable = min(max(r.durable, logStart), leo)
	r.hw = min(max(r.hw, logStart), leo)
}

// SetLogStart records that retention (or a follower following its leader's
// log start) raised the log start offset. The caller keeps it at or below
// the HW, so the HW never moves here in practice.
func (r *Replica) SetLogStart(logStart int64) {
	r.logStart = min(max(r.logStart, logStart), r.leo)
	r.durable = max(r.durable, r.logStart)
	r.hw = max(r.hw, r.logStart)
}

// FollowerHW records the HW a follower learnt from its leader: the local HW
// becomes min(leaderHW, leo) and does not move backwards (a new leader may
// start with an older HW than ours; records below any HW are committed).
func (r *Replica) FollowerHW(leaderHW int64) (changed bool) {
	nh := min(max(r.hw, leaderHW), r.leo)
	changed = nh != r.hw
	r.hw = nh
	return changed
}

// Tick expires parked requests and, on the leader, proposes removing
// followers that have not caught up within the lag time.
func (r *Replica) Tick(now time.Time) Decisions {
	d := r.decisions()
	if r.role != RoleLeader {
		return d
	}
	d.Complete = r.expireParked(now)
	if p := r.maybeShrink(now); p != nil {
		d.ProposeISR = p
	} else if p := r.maybeExpandAny(now); p != nil {
		d.ProposeISR = p
	}
	return d
}

func (r *Replica) decisions() Decisions { return Decisions{HW: r.hw} }

// String is a one-line summary for logs and scenario tests.
func (r *Replica) String() string {
	s := fmt.Sprintf("role=%s leader=%d epoch=%d pepoch=%d isr=%v", r.role, r.leader, r.leaderEpoch, r.partitionEpoch, r.isr)
	if r.pending != nil {
		s += fmt.Sprintf(" pending=%v", r.pending)
	}
	return s + fmt.Sprintf(" start=%d hw=%d leo=%d", r.logStart, r.hw, r.leo)
}
