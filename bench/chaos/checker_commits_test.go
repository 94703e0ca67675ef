package chaos

import (
	"strings"
	"testing"
	"time"
)

// withCommits gives cleanHistory's two consumers group commits: consumer
// 0 commits 5, 10 (acknowledged) then 20 (failed) on every partition,
// consumer 1 commits 7 (acknowledged); the groups read back hold what
// committed says.
func withCommits(h *History, committed map[int]map[int32]int64) *History {
	at := func(ms int) time.Time { return h.Start.Add(time.Duration(ms) * time.Millisecond) }
	all := func(o int64) map[int32]int64 { return map[int32]int64{0: o, 1: o, 2: o} }
	h.Groups = true
	h.Commits = []Commit{
		{Consumer: 0, Offsets: all(5), Sent: at(100), Done: at(101), Acked: true},
		{Consumer: 1, Offsets: all(7), Sent: at(150), Done: at(151), Acked: true},
		{Consumer: 0, Offsets: all(10), Sent: at(200), Done: at(201), Acked: true},
		{Consumer: 0, Offsets: all(20), Sent: at(300), Done: at(3300), Err: "timeout"},
	}
	h.Committed = committed
	return h
}

// The committed offsets read back must be the last acknowledged commit or
// a later attempt; anything else (older, never sent, missing) is a lost
// commit, and a run whose commits cannot be checked is unverified.
func TestCheckCommits(t *testing.T) {
	ok := map[int]map[int32]int64{0: {0: 10, 1: 20, 2: 10}, 1: {0: 7, 1: 7, 2: 7}}
	if r := Check(withCommits(cleanHistory(), ok)); !r.OK() || r.Commits != 4 || r.CommitsAcked != 3 {
		t.Fatalf("clean commits: OK %v, %d/%d commits: %v", r.OK(), r.CommitsAcked, r.Commits, r.Anomalies)
	}
	for _, c := range []struct {
		name      string
		committed map[int]map[int32]int64
		want      string
	}{
		{"went back", map[int]map[int32]int64{0: {0: 5, 1: 10, 2: 10}, 1: {0: 7, 1: 7, 2: 7}},
			"group chaos-0 holds offset 5, which no commit since the last acknowledged one sent (that one: offset 10"},
		{"never sent", map[int]map[int32]int64{0: {0: 10, 1: 10, 2: 10}, 1: {0: 7, 1: 8, 2: 7}},
			"group chaos-1 holds offset 8"},
		{"missing", map[int]map[int32]int64{0: {0: 10, 1: 10}, 1: {0: 7, 1: 7, 2: 7}},
			"group chaos-0 has no offset for the partition; offset 10 was acknowledged at t+201ms"},
	} {
		r := Check(withCommits(cleanHistory(), c.committed))
		if r.Count(LostCommit) != 1 || r.OK() || !strings.Contains(r.Anomalies[0].Detail, c.want) {
			t.Errorf("%s: %d lost commits, OK %v: %v; want one saying %q", c.name, r.Count(LostCommit), r.OK(), r.Anomalies, c.want)
		}
	}

	// Unverified: a group that could not be read back; no acknowledged commit.
	h := withCommits(cleanHistory(), map[int]map[int32]int64{0: {0: 10, 1: 10, 2: 10}})
	h.CommittedErr = map[int]string{1: "NotController"}
	if r := Check(h); r.Count(Unverified) != 1 || r.OK() || !strings.Contains(r.Anomalies[0].Detail, "group chaos-1's offsets could not be read back") {
		t.Errorf("unreadable group: %v", r.Anomalies)
	}
	h = withCommits(cleanHistory(), nil)
	for i := range h.Commits {
		h.Commits[i].Acked = false
	}
	if r := Check(h); r.Count(Unverified) != 1 || r.OK() || !strings.Contains(r.Anomalies[0].Detail, "no group commit was acknowledged (4 made)") {
		t.Errorf("no acknowledged commit: %v", r.Anomalies)
	}
	var b strings.Builder
	Check(withCommits(cleanHistory(), ok)).WriteText(&b)
	if !strings.Contains(b.String(), "group commits: 4 made, 3 acknowledged") {
		t.Errorf("report:\n%s", b.String())
	}
}
