package controller

import (
	"time"

	"paymentlog/node/metadata"
)

// sessions tracks broker liveness on the active controller. It is pure: time
// comes in as arguments. Not safe for concurrent use (Controller guards it).
type sessions struct {
	timeout time.Duration
	m       map[int32]session
}

type session struct {
	incarnation int64
	deadline    time.Time
	// heard is when this incarnation's latest heartbeat arrived, or its
	// session began here (activation, registration): its silence is
	// counted from it (probe.go).
	heard time.Time
	// probing: a probe of its port is in flight (silent hands it out once).
	probing bool
	// closedAt is when a probe sent after heard found its port closed (no
	// socket behind it: its process is gone), or when this node's raft had
	// found it so (markClosed); expired returns it from then on, session or
	// not. Zero: not found so. closedBy is what found it (PortFinders).
	closedAt time.Time
	closedBy portFinder
	// pendingSeq is the oldest heartbeat answer of this tenure that the
	// broker has not yet confirmed receiving (its AckedSeq is below it),
	// sent at pendingAt; 0 when every answer so far is confirmed or the
	// broker does not number its heartbeats. Heartbeats that keep arriving
	// while an answer stays unconfirmed for a session timeout mean the
	// broker can send but not receive: it is as good as gone (see
	// unanswered).
	pendingSeq int64
	pendingAt  time.Time
	// confirmBy, when set, is when the broker must have confirmed an
	// answer of this tenure by, sooner than unansweredAfter would ask
	// (expectConfirmation); zero once it has.
	confirmBy time.Time
	// applied is the metadata offset the broker's latest heartbeat of this
	// incarnation reported applied (hasApplied: one did); preferred.go.
	applied uint64
	// logAtBeat is this controller's metadata offset when the broker's
	// latest heartbeat arrived (beaten: one did), and keepingUp says that
	// heartbeat reported applying at least the logAtBeat of the one
	// before it: the broker was within about a heartbeat interval of the
	// metadata log (reportApplied, preferred.go).
	logAtBeat  uint64
	beaten     bool
	keepingUp  bool
	hasApplied bool
	// strayedAt is when the broker's heartbeats began to name a metadata
	// leader other than this controller, or none (zero: the latest named
	// it, or said nothing): its raft is not receiving this controller's
	// log (strayed).
	strayedAt time.Time
}

func newSessions(timeout time.Duration) *sessions {
	return &sessions{timeout: timeout, m: map[int32]session{}}
}

// reset gives every registered broker grace from now: a new controller's
// grace period (normally one full session).
func (s *sessions) reset(img *metadata.Image, now time.Time, grace time.Duration) {
	s.m = map[int32]session{}
	for _, b := range img.Brokers() {
		s.m[b.ID] = session{incarnation: b.Incarnation, deadline: now.Add(grace), heard: now}
	}
}

// shorten moves broker id's deadline earlier to at most deadline.
func (s *sessions) shorten(id int32, deadline time.Time) {
	if ss, ok := s.m[id]; ok && deadline.Before(ss.deadline) {
		ss.deadline = deadline
		s.m[id] = ss
	}
}

// extendAll moves every deadline to at least deadline, and gives every
// unconfirmed answer at least as long as a session from now (the
// controller stood still: the confirmations may be queued behind it).
func (s *sessions) extendAll(deadline time.Time) {
	for id, ss := range s.m {
		if ss.deadline.Before(deadline) {
			ss.deadline = deadline
		}
		if ss.pendingSeq > 0 && ss.pendingAt.Before(deadline.Add(-s.timeout)) {
			ss.pendingAt = deadline.Add(-s.timeout)
		}
		if !ss.confirmBy.IsZero() && ss.confirmBy.Before(deadline) {
			ss.confirmBy = deadline
		}
		s.m[id] = ss
	}
}

// clear forgets everything (leadership lost).
func (s *sessions) clear() { s.m = map[int32]session{} }

// touch extends a broker incarnation's session to now + timeout.
func (s *sessions) touch(id int32, incarnation int64, now time.Time) {
	ss := s.m[id]
	if ss.incarnation != incarnation {
		ss = session{incarnation: incarnation}
	}
	ss.deadline, ss.heard = now.Add(s.timeout), now
	s.m[id] = ss
}

// reportApplied records the metadata offset a heartbeat of broker id's
// incarnation reported applied (the highest such: heartbeats may be
// answered out of order), arriving when this controller's metadata log
// was at logOffset; and whether the broker keeps up with the log: that
// heartbeat reported applying at least where the log was when the one
// before it arrived, and (leaderOK) that its raft follows this
// controller. A broker that registered and caught up but can no longer
// receive the log (a link that loses most of what it carries) reports the
// same offset while the log moves on, and its raft soon loses the leader
// (which shows also while the log stands still).
func (s *sessions) reportApplied(id int32, incarnation int64, offset int64, logOffset uint64, leaderOK bool) {
	ss, ok := s.m[id]
	if !ok || ss.incarnation != incarnation {
		return
	}
	ss.keepingUp = ss.beaten && leaderOK && offset >= 0 && uint64(offset) >= ss.logAtBeat
	ss.logAtBeat, ss.beaten = logOffset, true
	switch {
	case leaderOK:
		ss.strayedAt = time.Time{}
	case ss.strayedAt.IsZero():
		ss.strayedAt = ss.heard
	}
	if offset >= 0 && (!ss.hasApplied || uint64(offset) > ss.applied) {
		ss.applied, ss.hasApplied = uint64(offset), true
	}
	s.m[id] = ss
}

// keepingUp reports whether broker id's incarnation kept up with the
// metadata log at its latest heartbeat (reportApplied), and that heartbeat
// came at most within ago.
func (s *sessions) keepingUp(id int32, incarnation int64, now time.Time, within time.Duration) bool {
	ss, ok := s.m[id]
	return ok && ss.incarnation == incarnation && ss.keepingUp && now.Sub(ss.heard) <= within
}

// appliedOf returns the metadata offset broker id's incarnation last
// reported applied (reportApplied); ok false when none did.
func (s *sessions) appliedOf(id int32, incarnation int64) (uint64, bool) {
	ss, ok := s.m[id]
	if !ok || ss.incarnation != incarnation || !ss.hasApplied {
		return 0, false
	}
	return ss.applied, true
}

// answered records that a heartbeat numbered seq, confirming answers up to
// acked, was answered at now. A fenced broker's answers are not tracked
// (fenced: it was fenced before this heartbeat or still is; each such
// heartbeat starts afresh): it is unfenced only once it has applied the
// metadata log, which it cannot without receiving, and the heartbeat that
// unfences it after its link heals still confirms only old answers.
func (s *sessions) answered(id int32, incarnation, seq, acked int64, fenced bool, now time.Time) {
	ss, ok := s.m[id]
	if !ok || ss.incarnation != incarnation || seq <= 0 {
		return
	}
	if fenced || (ss.pendingSeq > 0 && acked >= ss.pendingSeq) {
		ss.pendingSeq, ss.pendingAt, ss.confirmBy = 0, time.Time{}, time.Time{}
	}
	if ss.pendingSeq == 0 {
		ss.pendingSeq, ss.pendingAt = seq, now
	}
	s.m[id] = ss
}

// expired returns the unfenced brokers of img whose session has run out or
// whose port a probe found closed, in id order. A broker without a session
// for its current incarnation (it was registered but never heard from
// here) gets one starting now.
func (s *sessions) expired(img *metadata.Image, now time.Time) []metadata.BrokerState {
	var out []metadata.BrokerState
	for _, b := range img.Brokers() {
		ss, ok := s.m[b.ID]
		if !ok || ss.incarnation != b.Incarnation {
			s.m[b.ID] = session{incarnation: b.Incarnation, deadline: now.Add(s.timeout), heard: now}
			continue
		}
		if !b.Fenced && (now.After(ss.deadline) || !ss.closedAt.IsZero()) {
			out = append(out, b)
		}
	}
	return out
}

// nextDeadline returns the earliest session deadline of an unfenced broker
// of img with a session for its current incarnation (zero if none): when
// expired will next have something to return.
func (s *sessions) nextDeadline(img *metadata.Image) time.Time {
	var at time.Time
	for _, b := range img.Brokers() {
		ss, ok := s.m[b.ID]
		if !ok || ss.incarnation != b.Incarnation || b.Fenced {
			continue
		}
		if at.IsZero() || ss.deadline.Before(at) {
			at = ss.deadline
		}
	}
	return at
}

// forget drops broker id's session (it was unregistered).
func (s *sessions) forget(id int32) { delete(s.m, id) }

// forgetAnswers stops tracking broker id's unconfirmed answer (it is
// fenced: see answered).
func (s *sessions) forgetAnswers(id int32) {
	if ss, ok := s.m[id]; ok {
		ss.pendingSeq, ss.pendingAt, ss.confirmBy = 0, time.Time{}, time.Time{}
		s.m[id] = ss
	}
}

// missedConfirmBy reports whether ss has not confirmed an answer by its
// confirmBy. The first answer it has had to confirm gets at least the half
// session a broker waits for an answer (node.heartbeatOnce) either way: a
// broker whose first heartbeat arrives late is not found deaf on it.
func (s *sessions) missedConfirmBy(ss session, now time.Time) bool {
	return !ss.confirmBy.IsZero() && now.After(ss.confirmBy) && now.After(ss.pendingAt.Add(s.timeout/2))
}

// expectConfirmation asks broker id, whose heartbeats keep arriving, to
// confirm one of this tenure's answers by the given time, or be found
// deaf then (unanswered), without waiting unansweredAfter from its first
// answer. For the previous controller's broker (see Controller.activate).
func (s *sessions) expectConfirmation(id int32, by time.Time) {
	if ss, ok := s.m[id]; ok {
		ss.confirmBy = by
		s.m[id] = ss
	}
}

// unansweredAfter is how long an answer may go unconfirmed before the
// broker counts as deaf: a session timeout, plus the half session a broker
// waits for each heartbeat's answer (node.heartbeatOnce). With both of its
// heartbeats in flight waiting for answers lost while it was deaf, a
// broker sends the next one, whose answer it will confirm, up to that long
// after its link heals; a broker deaf for less than a session timeout is
// then not fenced, as a silent one is not.
func (s *sessions) unansweredAfter() time.Duration { return s.timeout + s.timeout/2 }

// strayed returns the unfenced brokers of img, in id order, whose session
// is alive but whose heartbeats have named a metadata leader other than
// this controller, or none, for longer than unansweredAfter: their raft
// receives nothing of this controller's log (a link that carries small
// heartbeats and their answers but not the raft traffic: seen with heavy
// loss on a narrow link), so they would not hear of a leadership, an ISR
// change or a fencing. A short stray (a raft election, a leader handoff)
// is over long before.
func (s *sessions) strayed(img *metadata.Image, now time.Time) []metadata.BrokerState {
	var out []metadata.BrokerState
	for _, b := range img.Brokers() {
		ss, ok := s.m[b.ID]
		if !ok || ss.incarnation != b.Incarnation || b.Fenced || ss.strayedAt.IsZero() || now.After(ss.deadline) || !ss.closedAt.IsZero() {
			continue
		}
		if now.After(ss.strayedAt.Add(s.unansweredAfter())) {
			out = append(out, b)
		}
	}
	return out
}

// unanswered returns the unfenced brokers of img, in id order, whose
// session is alive but who have not confirmed an answer sent more than
// unansweredAfter ago, or any answer by the time expectConfirmation set:
// their heartbeats arrive, the answers (and so the metadata, fetches and
// produce requests sent to them) do not.
func (s *sessions) unanswered(img *metadata.Image, now time.Time) []metadata.BrokerState {
	var out []metadata.BrokerState
	for _, b := range img.Brokers() {
		ss, ok := s.m[b.ID]
		if !ok || ss.incarnation != b.Incarnation || b.Fenced || ss.pendingSeq == 0 || now.After(ss.deadline) || !ss.closedAt.IsZero() {
			continue
		}
		if now.After(ss.pendingAt.Add(s.unansweredAfter())) || s.missedConfirmBy(ss, now) {
			out = append(out, b)
		}
	}
	return out
}
