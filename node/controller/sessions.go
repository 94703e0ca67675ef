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
}

func newSessions(timeout time.Duration) *sessions {
	return &sessions{timeout: timeout, m: map[int32]session{}}
}

// reset gives every registered broker grace from now: a new controller's
// grace period (normally one full session).
func (s *sessions) reset(img *metadata.Image, now time.Time, grace time.Duration) {
	s.m = map[int32]session{}
	for _, b := range img.Brokers() {
		s.m[b.ID] = session{b.Incarnation, now.Add(grace)}
	}
}

// shorten moves broker id's deadline earlier to at most deadline.
func (s *sessions) shorten(id int32, deadline time.Time) {
	if ss, ok := s.m[id]; ok && deadline.Before(ss.deadline) {
		ss.deadline = deadline
		s.m[id] = ss
	}
}

// extendAll moves every deadline to at least deadline.
func (s *sessions) extendAll(deadline time.Time) {
	for id, ss := range s.m {
		if ss.deadline.Before(deadline) {
			ss.deadline = deadline
			s.m[id] = ss
		}
	}
}

// clear forgets everything (leadership lost).
func (s *sessions) clear() { s.m = map[int32]session{} }

// touch extends a broker incarnation's session to now + timeout.
func (s *sessions) touch(id int32, incarnation int64, now time.Time) {
	s.m[id] = session{incarnation, now.Add(s.timeout)}
}

// expired returns the unfenced brokers of img whose session has run out, in
// id order. A broker without a session for its current incarnation (it was
// registered but never heard from here) gets one starting now.
func (s *sessions) expired(img *metadata.Image, now time.Time) []metadata.BrokerState {
	var out []metadata.BrokerState
	for _, b := range img.Brokers() {
		ss, ok := s.m[b.ID]
		if !ok || ss.incarnation != b.Incarnation {
			s.m[b.ID] = session{b.Incarnation, now.Add(s.timeout)}
			continue
		}
		if !b.Fenced && now.After(ss.deadline) {
			out = append(out, b)
		}
	}
	return out
}
