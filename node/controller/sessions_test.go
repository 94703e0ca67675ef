package controller

import (
	"testing"
	"time"

	"paymentlog/node/metadata"
)

// sessionsImage is an image with broker 2 registered and unfenced.
func sessionsImage(t *testing.T) *metadata.Image {
	t.Helper()
	img := metadata.EmptyImage()
	recs := []metadata.Record{
		metadata.BrokerRegistered{ID: 2, Incarnation: 1, Addr: "127.0.0.1:7102"},
		metadata.BrokerUnfenced{ID: 2, Incarnation: 1},
	}
	after, _, err := img.ApplyEntry(0, recs)
	if err != nil {
		t.Fatal(err)
	}
	return after
}

// TestUnansweredToleratesLoss: a lossy link that drops some answers, but
// lets one through now and then, never makes a broker unanswered; one that
// drops every answer does after 1.5 session timeouts; a controller stall
// gives the broker a fresh timeout; an unnumbered broker is never tracked.
func TestUnansweredToleratesLoss(t *testing.T) {
	img := sessionsImage(t)
	now := time.Unix(1000, 0)
	const timeout = time.Second
	beat := func(s *sessions, seq, acked int64) {
		s.touch(2, 1, now)
		s.answered(2, 1, seq, acked, false, now)
	}

	// Three answers in four lost, heartbeats every 100ms, for 5s.
	s := newSessions(timeout)
	acked := int64(0)
	for seq := int64(1); seq <= 50; seq++ {
		beat(s, seq, acked)
		if seq%4 == 0 {
			acked = seq
		}
		if got := s.unanswered(img, now); len(got) != 0 {
			t.Fatalf("lossy link: broker unanswered at seq %d", seq)
		}
		now = now.Add(100 * time.Millisecond)
	}

	// Answer 51 is the last to get through (confirmed by 52's heartbeat);
	// every later one is lost: 1.5 session timeouts after answer 52 was
	// sent the broker is unanswered, not before.
	beat(s, 51, 50)
	now = now.Add(100 * time.Millisecond)
	sent52 := now
	for seq := int64(52); seq <= 67; seq++ {
		beat(s, seq, 51)
		if got := s.unanswered(img, now); len(got) != 0 {
			t.Fatalf("unanswered %v after answer 52", now.Sub(sent52))
		}
		now = now.Add(100 * time.Millisecond)
	}
	now = sent52.Add(1500*time.Millisecond + time.Millisecond)
	if got := s.unanswered(img, now); len(got) != 1 || got[0].ID != 2 {
		t.Fatalf("no answer confirmed for 1.5s: unanswered = %v", got)
	}
	s.extendAll(now.Add(timeout))
	if got := s.unanswered(img, now.Add(timeout/2)); len(got) != 0 {
		t.Fatalf("after a controller stall: unanswered = %v", got)
	}

	// Unnumbered heartbeats (an older broker) are not tracked.
	s = newSessions(timeout)
	for range 30 {
		beat(s, 0, 0)
		now = now.Add(100 * time.Millisecond)
	}
	if got := s.unanswered(img, now); len(got) != 0 {
		t.Fatalf("unnumbered heartbeats: unanswered = %v", got)
	}
}

// TestExpectConfirmation: a broker asked to confirm an answer by a time
// (the previous controller's) is unanswered once that passes without a
// confirmation, but never before its first answer has been out for half a
// session; a confirmation lifts the requirement.
func TestExpectConfirmation(t *testing.T) {
	img := sessionsImage(t)
	const timeout = time.Second
	start := time.Unix(1000, 0)
	s := newSessions(timeout)
	s.reset(img, start, timeout)
	s.expectConfirmation(2, start.Add(650*time.Millisecond))
	// Its first heartbeat arrives late, 600ms in.
	s.touch(2, 1, start.Add(600*time.Millisecond))
	s.answered(2, 1, 1, 0, false, start.Add(600*time.Millisecond))
	if got := s.unanswered(img, start.Add(700*time.Millisecond)); len(got) != 0 {
		t.Fatalf("unanswered 100ms after its first answer: %v", got)
	}
	s.touch(2, 1, start.Add(1100*time.Millisecond))
	s.answered(2, 1, 2, 0, false, start.Add(1100*time.Millisecond))
	if got := s.unanswered(img, start.Add(1101*time.Millisecond)); len(got) != 1 {
		t.Fatalf("no confirmation for half a session past the deadline: unanswered = %v", got)
	}
	// Confirmed: only the usual 1.5 sessions apply from then on.
	s.answered(2, 1, 3, 2, false, start.Add(1150*time.Millisecond))
	if got := s.unanswered(img, start.Add(2*time.Second)); len(got) != 0 {
		t.Fatalf("unanswered after a confirmation: %v", got)
	}
}

// nextDeadline is the earliest deadline of an unfenced broker's current
// session: none without a session, the touched one after a heartbeat, none
// once the broker is fenced or its session is of another incarnation.
func TestNextDeadline(t *testing.T) {
	img := sessionsImage(t)
	now := time.Unix(1000, 0)
	s := newSessions(time.Second)
	if at := s.nextDeadline(img); !at.IsZero() {
		t.Fatalf("no session yet: %v", at)
	}
	s.touch(2, 1, now)
	if at := s.nextDeadline(img); !at.Equal(now.Add(time.Second)) {
		t.Fatalf("after a heartbeat: %v, want %v", at, now.Add(time.Second))
	}
	s.touch(2, 7, now) // another incarnation than the image's
	if at := s.nextDeadline(img); !at.IsZero() {
		t.Fatalf("session of another incarnation: %v", at)
	}
	s.touch(2, 1, now)
	fenced, _, err := img.ApplyEntry(img.Offset()+1, []metadata.Record{metadata.BrokerFenced{ID: 2, Incarnation: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if at := s.nextDeadline(fenced); !at.IsZero() {
		t.Fatalf("fenced broker: %v", at)
	}
}
