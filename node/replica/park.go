package replica

import (
	"slices"
	"time"
)

// ParkProduce parks produce request id, whose batch was appended (or found
// as a duplicate) while this replica led epoch, until the HW reaches required
// (the batch's last offset + 1) or deadline passes (checked by Tick). It
// completes at once if the HW is already there, or with NotLeader on a
// non-leader or when the leadership epoch belongs to has ended since (the
// batch may have been truncated away and its offsets reused), or with
// NotEnoughReplicasAfterAppend while the HW cannot advance (underMinISR).
func (r *Replica) ParkProduce(id uint64, epoch int32, required int64, deadline time.Time) Decisions {
	d := r.decisions()
	switch {
	case r.CheckLeadership(epoch) != OK:
		d.Complete = []Completion{{id, NotLeader}}
	case r.hw >= required:
		d.Complete = []Completion{{id, OK}}
	case r.underMinISR():
		d.Complete = []Completion{{id, NotEnoughReplicasAfterAppend}}
	default:
		i, _ := slices.BinarySearchFunc(r.parked, required, func(p parkedProduce, req int64) int {
			if p.required <= req { // equal keys keep arrival order
				return -1
			}
			return 1
		})
		r.parked = slices.Insert(r.parked, i, parkedProduce{id: id, required: required, deadline: deadline})
	}
	return d
}

// CheckLeadership says whether a batch appended while this replica led
// epoch still stands where it was appended: OK while the replica has led
// without a break since then, NotLeader once that leadership has ended, even
// if a later one has begun (the batch may have been truncated away and its
// offsets reused by other records).
func (r *Replica) CheckLeadership(epoch int32) Code {
	if r.role != RoleLeader || epoch < r.leaderSince || epoch > r.leaderEpoch {
		return NotLeader
	}
	return OK
}

// Cancel removes a parked request (its waiter gave up); it reports whether
// the request was still parked.
func (r *Replica) Cancel(id uint64) bool {
	i := slices.IndexFunc(r.parked, func(p parkedProduce) bool { return p.id == id })
	if i < 0 {
		return false
	}
	r.parked = slices.Delete(r.parked, i, i+1)
	return true
}

// completeParked completes every parked request the HW has passed.
func (r *Replica) completeParked() []Completion {
	n := 0
	for n < len(r.parked) && r.parked[n].required <= r.hw {
		n++
	}
	if n == 0 {
		return nil
	}
	out := make([]Completion, n)
	for i, p := range r.parked[:n] {
		out[i] = Completion{p.id, OK}
	}
	r.parked = slices.Delete(r.parked, 0, n)
	return out
}

func (r *Replica) expireParked(now time.Time) []Completion {
	var out []Completion
	r.parked = slices.DeleteFunc(r.parked, func(p parkedProduce) bool {
		if !p.deadline.IsZero() && !now.Before(p.deadline) {
			out = append(out, Completion{p.id, Timeout})
			return true
		}
		return false
	})
	return out
}

// underMinISR reports whether the set the HW is computed over (the
// effective ISR) is smaller than the minimum ISR: the HW cannot advance, so
// no parked request can complete OK until the ISR changes.
func (r *Replica) underMinISR() bool {
	return r.role == RoleLeader && len(r.effectiveISR()) < r.minISR
}

// answerUnderMinISR completes every parked request with
// NotEnoughReplicasAfterAppend while underMinISR (Kafka's answer when the
// ISR shrinks below min.insync.replicas after the append): the producer
// learns at once that the partition cannot commit, instead of after its
// request timeout, and treats the outcome as unknown (the batch is in the
// log; an idempotent retry finds it once the ISR recovers). Call it after
// the ISR, the pending change or the minimum ISR changed, and after
// completing what the HW passed.
func (r *Replica) answerUnderMinISR() []Completion {
	if len(r.parked) == 0 || !r.underMinISR() {
		return nil
	}
	return r.failParked(NotEnoughReplicasAfterAppend)
}

func (r *Replica) failParked(c Code) []Completion {
	out := make([]Completion, 0, len(r.parked))
	for _, p := range r.parked {
		out = append(out, Completion{p.id, c})
	}
	r.parked = nil
	return out
}
