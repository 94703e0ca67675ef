package node_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/node"
	"paymentlog/segment"
	"paymentlog/segment/segmenttest"
)

// startScrubbedControllers starts 3 controllers that scrub only when the
// test says, creates topic "payments" and returns a follower controller
// (not the active one) that has applied it.
func startScrubbedControllers(ctx context.Context, t *testing.T) (tc *testCluster, cl *client.Client, f int32) {
	t.Helper()
	tc = mustStartClusterWith(t, 3, func(c *node.Config) { c.LogScrubInterval = 0 }) // the test runs the pass
	tc.waitAlive(3)
	cl = tc.client(ctx)
	createTopic(ctx, t, tc, cl, client.TopicSpec{Name: "payments", Partitions: 1, ReplicationFactor: 3, MinISR: 2})
	var lead int32
	waitFor(t, "an active controller", 15*time.Second, func() bool { lead = tc.activeController(); return lead != 0 })
	f = 1
	if f == lead {
		f = 2
	}
	waitFor(t, "the follower to apply the topic", 15*time.Second, func() bool {
		_, ok := tc.node(f).Store().Image().Topic("payments")
		return ok
	})
	return tc, cl, f
}

// scrubStopsNode runs a metadata scrub pass on node id, which must find a
// corrupt entry and stop the node with an error wrapping
// segment.ErrScrubCorrupt (what the in-process restart restarts on); the
// node is then shut down, to be started again.
func scrubStopsNode(ctx context.Context, t *testing.T, tc *testCluster, id int32) {
	t.Helper()
	n := tc.node(id)
	if _, err := n.ScrubMetadataNow(ctx); !errors.Is(err, segment.ErrScrubCorrupt) {
		t.Fatalf("scrub: %v; want segment.ErrScrubCorrupt", err)
	}
	select {
	case <-n.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the node did not stop after its metadata scrub found a corrupt entry")
	}
	if !errors.Is(n.Err(), segment.ErrScrubCorrupt) {
		t.Fatalf("the node stopped with %v; want an error wrapping segment.ErrScrubCorrupt (the in-process restart's cue)", n.Err())
	}
	tc.mu.Lock()
	delete(tc.nodes, id)
	tc.mu.Unlock()
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	n.Shutdown(sctx)
	scancel()
}

// A controller's metadata log rots (an applied entry): its scrub finds it
// and the node stops with an error wrapping segment.ErrScrubCorrupt (what
// the in-process restart restarts on); its next start sets the log's
// segments aside, truncates it at the entry and rejoins as a vote-guarded
// controller (node/rejoin.go); it catches up, votes again, and the
// cluster's metadata moves on.
func TestMetadataScrubRepairsAController(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tc, cl, f := startScrubbedControllers(ctx, t)
	fn := tc.node(f)
	if s, err := fn.ScrubMetadataNow(ctx); err != nil || s.Bytes == 0 {
		t.Fatalf("scrub of a sound metadata log: %+v, %v", s, err)
	}
	victim := fn.Raft().Status().Applied / 2
	dir := filepath.Join(tc.dir, fmt.Sprintf("node%d", f), node.MetadataDirName)
	segmenttest.RotBatch(t, dir, int64(victim))
	scrubStopsNode(ctx, t, tc, f)

	nf := tc.start(f)
	q := filepath.Join(dir, fmt.Sprintf("%s%020d", segment.ScrubQuarantinePrefix, 1))
	if kept, _ := filepath.Glob(filepath.Join(q, "*.log")); len(kept) == 0 {
		t.Fatalf("nothing set aside in %s", q)
	}
	if got := nf.Raft().ScrubStats().QuarantineBytes; got == 0 {
		t.Fatal("no quarantine bytes counted")
	}
	waitFor(t, "the repaired controller caught up and voting", 30*time.Second, func() bool {
		st := nf.Raft().Status()
		return !st.VoteGuarded && st.Applied > victim
	})
	createTopic(ctx, t, tc, cl, client.TopicSpec{Name: "after", Partitions: 1, ReplicationFactor: 3, MinISR: 2})
	waitFor(t, "the repaired controller to apply the new topic", 15*time.Second, func() bool {
		_, ok := nf.Store().Image().Topic("after")
		_, old := nf.Store().Image().Topic("payments")
		return ok && old
	})
	if _, err := nf.ScrubMetadataNow(ctx); err != nil {
		t.Fatalf("scrub after the repair: %v", err)
	}
	// The metadata log is one segment here: the quarantine holds only the
	// copy of the rotten one, whose last index is bounded past the bad
	// entry (raftnode's entriesBound). The sweep keeps it until it is
	// past --log-scrub-quarantine-retention and the controller has applied
	// past that bound, then removes it.
	if n := nf.SweepMetadataQuarantines(time.Now()); n != 0 {
		t.Fatalf("a sweep removed %d quarantines set aside just now", n)
	}
	later := time.Now().Add(node.DefaultConfig().LogScrubQuarantineRetention + time.Minute)
	i := 0
	for ; nf.SweepMetadataQuarantines(later) == 0; i++ {
		if i == 40 {
			t.Fatalf("quarantine %s kept after %d more topics (applied %d)", q, i, nf.Raft().Status().Applied)
		}
		createTopic(ctx, t, tc, cl, client.TopicSpec{Name: fmt.Sprintf("more-%d", i), Partitions: 1, ReplicationFactor: 1, MinISR: 1})
		waitFor(t, "the repaired controller to apply the topic", 15*time.Second, func() bool {
			_, ok := nf.Store().Image().Topic(fmt.Sprintf("more-%d", i))
			return ok
		})
	}
	t.Logf("removed after %d more topics, at applied index %d (rotten entry %d)", i, nf.Raft().Status().Applied, victim)
	if _, err := os.Stat(q); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("quarantine %s: %v; want it removed", q, err)
	}
	if st := nf.Raft().ScrubStats(); st.QuarantineBytes != 0 || st.QuarantinesRemoved != 1 {
		t.Fatalf("%+v; want no quarantine bytes, 1 removed", st)
	}
}

// The node scrubs its metadata log on its own, on the partitions' knobs
// (here a pass every 20 ms from the start), and /metrics shows the work.
func TestMetadataScrubRunsOnItsOwnAndShowsInMetrics(t *testing.T) {
	tc := mustStartClusterWith(t, 1, func(c *node.Config) {
		withMetrics(c)
		c.LogScrubInterval, c.LogScrubDelay = 20*time.Millisecond, 0
	})
	tc.waitAlive(1)
	n := tc.node(1)
	waitFor(t, "two metadata scrub passes", 15*time.Second, func() bool {
		s := n.Raft().ScrubStats()
		return s.Passes >= 2 && s.Bytes > 0
	})
	resp, err := http.Get("http://" + n.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, name := range []string{"paymentlog_metadata_log_scrub_bytes_total", "paymentlog_metadata_log_scrub_passes_total"} {
		m := regexp.MustCompile(`(?m)^` + name + ` (\d+)$`).FindStringSubmatch(string(b))
		if m == nil || m[1] == "0" {
			t.Fatalf("%s: %v in /metrics:\n%s", name, m, b)
		}
	}
	for _, name := range []string{"paymentlog_metadata_log_scrub_corrupt_total 0", "paymentlog_metadata_log_scrub_snapshot_repairs_total 0",
		"paymentlog_metadata_log_scrub_quarantine_bytes 0", "paymentlog_metadata_log_scrub_quarantine_removed_total 0"} {
		if !strings.Contains(string(b), "\n"+name+"\n") {
			t.Fatalf("no %q in /metrics", name)
		}
	}
}

// A broker-only node (a learner of the metadata group) whose metadata log
// rots: its scrub finds it and stops it; the restart sets the segments
// aside and truncates, and the broker starts unguarded (a learner never
// votes: there is no vote to withhold), refetches and applies what the
// controllers applied, to the same offset.
func TestMetadataScrubRepairsABrokerOnlyNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tc := mustStartClusterWith(t, 3, func(c *node.Config) { c.LogScrubInterval = 0 })
	const b = 4
	tc.start(b)
	tc.waitAlive(4)
	cl := tc.client(ctx)
	createTopic(ctx, t, tc, cl, client.TopicSpec{Name: "payments", Partitions: 1, ReplicationFactor: 3, MinISR: 2})
	bn := tc.node(b)
	waitFor(t, "the broker to apply the topic", 15*time.Second, func() bool {
		_, ok := bn.Store().Image().Topic("payments")
		return ok
	})
	if st := bn.Raft().Status(); !slices.Contains(st.Learners, uint64(b)) {
		t.Fatalf("node %d is not a learner of the metadata group: %+v", b, st)
	}
	victim := bn.Raft().Status().Applied / 2
	dir := filepath.Join(tc.dir, fmt.Sprintf("node%d", b), node.MetadataDirName)
	base := segmenttest.RotBatch(t, dir, int64(victim))
	scrubStopsNode(ctx, t, tc, b)

	nb := tc.start(b)
	if st := nb.Raft().Status(); st.VoteGuarded || st.LastIndex >= victim {
		t.Fatalf("repaired broker: guarded %v, last index %d; want unguarded, truncated below %d", st.VoteGuarded, st.LastIndex, victim)
	}
	q := filepath.Join(dir, fmt.Sprintf("%s%020d", segment.ScrubQuarantinePrefix, base))
	if kept, _ := filepath.Glob(filepath.Join(q, "*.log")); len(kept) == 0 {
		t.Fatalf("nothing set aside in %s", q)
	}
	createTopic(ctx, t, tc, cl, client.TopicSpec{Name: "after", Partitions: 1, ReplicationFactor: 3, MinISR: 2})
	ctrl := tc.node(1)
	waitFor(t, "the repaired broker to apply what the controllers applied", 30*time.Second, func() bool {
		want, got := ctrl.Store().Image(), nb.Store().Image()
		return got.Offset() == want.Offset() && slices.Equal(got.TopicNames(), want.TopicNames()) && slices.Contains(got.TopicNames(), "after")
	})
	if _, err := nb.ScrubMetadataNow(ctx); err != nil {
		t.Fatalf("scrub after the repair: %v", err)
	}
}

// The scrub finds a controller's metadata entry corrupt, but the bytes
// check out at the restart (the damage was in memory) and the log still
// ends where it did: the controller starts unguarded, nothing set aside.
func TestMetadataScrubOfASoundLogLeavesTheControllerUnguarded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tc, cl, f := startScrubbedControllers(ctx, t)
	fn := tc.node(f)
	dir := filepath.Join(tc.dir, fmt.Sprintf("node%d", f), node.MetadataDirName)
	segs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(segs) == 0 {
		t.Fatalf("segments in %s: %v %v", dir, segs, err)
	}
	active := segs[len(segs)-1]
	sound, err := os.ReadFile(active)
	if err != nil {
		t.Fatal(err)
	}
	base := segmenttest.RotBatch(t, dir, int64(fn.Raft().Status().Applied/2))
	scrubStopsNode(ctx, t, tc, f)
	last := fn.Raft().Status().LastIndex
	if err := os.WriteFile(active, sound, 0o644); err != nil { // put back
		t.Fatal(err)
	}

	nf := tc.start(f)
	if st := nf.Raft().Status(); st.VoteGuarded || st.LastIndex != last {
		t.Fatalf("controller after a repair that took nothing out: guarded %v, last index %d; want unguarded, last index %d", st.VoteGuarded, st.LastIndex, last)
	}
	q := filepath.Join(dir, fmt.Sprintf("%s%020d", segment.ScrubQuarantinePrefix, base))
	if _, err := os.Stat(q); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("quarantine %s: %v; want none", q, err)
	}
	createTopic(ctx, t, tc, cl, client.TopicSpec{Name: "after", Partitions: 1, ReplicationFactor: 3, MinISR: 2})
	waitFor(t, "the controller to apply the new topic", 15*time.Second, func() bool {
		_, ok := nf.Store().Image().Topic("after")
		return ok
	})
}
