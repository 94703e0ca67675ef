package node_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/node"
	"paymentlog/node/metadata"
	"paymentlog/segment"
)

// stallResumeSlack is what a stall may cost beyond the stall timeout and
// the session timeout before acks=all writes resume on the new leader:
// the controller's election of an in-sync replica, the producer's metadata
// refresh and retry backoff, on a loaded 2-core machine.
const stallResumeSlack = 3 * time.Second

// TestLeaderDiskStallMovesLeadership: the flushes of a partition leader's
// log hang (File.Sync and Mapping.Flush block until released) while an
// idempotent acks=all producer writes on. The node holds back its
// heartbeats once the flush has been in flight for --disk-stall-timeout,
// the controller fences it and an in-sync replica takes over: writes
// resume within the stall timeout + the session timeout +
// stallResumeSlack. Its /readyz and metrics say why. Once the flush
// returns it is unfenced and rejoins the ISR, and every acknowledged
// record reads back at its offset, once.
func TestLeaderDiskStallMovesLeadership(t *testing.T) {
	runDiskStall(t, func(ctx context.Context, t *testing.T, s *stallCluster) func(op segment.FaultOp, path string) bool {
		s.stalled = s.leader
		return func(op segment.FaultOp, path string) bool {
			return op == segment.OpSync && strings.HasSuffix(path, ".log") && !strings.Contains(path, node.MetadataDirName)
		}
	}, "", nil)
}

// TestBrokerMetadataLogStallMovesLeadership: only the metadata log of a
// partition leader (not the active controller) hangs: every write and
// sync under its metadata directory blocks. It cannot apply metadata any
// more (the next change, a topic created, blocks its raft log), and its
// heartbeats would report a metadata offset that no longer moves: it is
// a stalled disk like any other, so it holds back its heartbeats and the
// controller moves its leaderships. Its partition log is healthy, but it
// would lead on a stale view (it cannot learn of the controller's
// changes); writes resume on the new leader within the same bound, and
// after the stall it applies, is unfenced and rejoins the ISR.
func TestBrokerMetadataLogStallMovesLeadership(t *testing.T) {
	runDiskStall(t, func(ctx context.Context, t *testing.T, s *stallCluster) func(op segment.FaultOp, path string) bool {
		s.stalled = s.leader
		if a := s.tc.activeController(); a == s.stalled {
			other := int32(1 + s.stalled%3)
			if err := s.tc.node(a).Raft().TransferLeadership(ctx, uint64(other)); err != nil {
				t.Fatalf("moving the active controller off node %d: %v", a, err)
			}
			waitFor(t, "another active controller", 15*time.Second, func() bool {
				a := s.tc.activeController()
				return a != 0 && a != s.stalled
			})
		}
		return func(op segment.FaultOp, path string) bool {
			return op != segment.OpOpen && op != segment.OpMap && strings.Contains(path, node.MetadataDirName)
		}
	}, node.MetadataDirName, func(ctx context.Context, t *testing.T, s *stallCluster) {
		// A metadata change every node's raft log appends.
		if _, err := s.c.Admin().CreateTopic(ctx, client.TopicSpec{Name: "trigger", Partitions: 1, ReplicationFactor: 2, MinISR: 1}); err != nil {
			t.Logf("creating a topic to write the metadata log: %v", err)
		}
	})
}

// stallCluster is a three-node cluster on in-memory file systems (the
// partition logs' and the metadata log's), with metrics served.
type stallCluster struct {
	tc       *testCluster
	c        *client.Client
	logFS    map[int32]*segment.MemFS
	metaFS   map[int32]*segment.MemFS
	leader   int32 // payments-0's leader when the stall starts
	stalled  int32 // the node whose disk stalls
	observed chan time.Time
}

// view is the metadata image of a node whose disk is not stalled.
func (s *stallCluster) view() *metadata.Image {
	return s.tc.node(1 + s.stalled%3).Store().Image()
}

// leaderMovedBy waits until deadline for payments-0 to be led by another
// node than the stalled one, without it in the ISR, and returns when it
// saw that.
func (s *stallCluster) leaderMovedBy(deadline time.Time) (time.Time, bool) {
	for {
		p, _ := s.view().Partition("payments", 0)
		if p.Leader != 0 && p.Leader != s.stalled && !slices.Contains(p.ISR, s.stalled) {
			return time.Now(), true
		}
		if time.Now().After(deadline) {
			return time.Time{}, false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// runDiskStall runs a stall scenario: arm returns which operations of the
// stalled node's file systems hang (and sets s.stalled); pathHint is what
// the /readyz reason must name (default: the partition log); trigger, if
// set, makes the stalled node reach the hanging operation.
func runDiskStall(t *testing.T, arm func(context.Context, *testing.T, *stallCluster) func(segment.FaultOp, string) bool,
	pathHint string, trigger func(context.Context, *testing.T, *stallCluster)) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	s := &stallCluster{logFS: map[int32]*segment.MemFS{}, metaFS: map[int32]*segment.MemFS{}, observed: make(chan time.Time, 1)}
	for id := int32(1); id <= 3; id++ {
		s.logFS[id], s.metaFS[id] = segment.NewMemFS(), segment.NewMemFS()
	}
	s.tc = mustStartClusterWith(t, 3, func(cfg *node.Config) {
		cfg.LogFS, cfg.MetadataFS = s.logFS[cfg.ID], s.metaFS[cfg.ID]
		cfg.MetricsAddr = "127.0.0.1:0"
	})
	s.tc.waitAlive(3)
	s.c = s.tc.client(ctx)
	createTopic(ctx, t, s.tc, s.c, client.TopicSpec{Name: "payments", Partitions: 1, ReplicationFactor: 3, MinISR: 2})
	s.leader = waitLeader(t, s.tc, "payments", 0)
	timeout := node.DefaultDiskStallTimeout
	bound := timeout + node.DefaultSessionTimeout + stallResumeSlack

	w := startTimedWriter(ctx, t, s.c)
	w.waitAcked(t, 200)
	match := arm(ctx, t, s)
	victim := s.tc.node(s.stalled)
	released := make(chan struct{})
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(released) }) }
	defer release() // before the cluster's cleanup: a hung operation would keep its node from stopping
	fault := func(op segment.FaultOp, path string) error {
		if match(op, path) {
			select {
			case s.observed <- time.Now():
			default:
			}
			<-released
		}
		return nil
	}
	s.logFS[s.stalled].SetFault(fault)
	s.metaFS[s.stalled].SetFault(fault)
	if trigger != nil {
		go trigger(ctx, t, s)
	}
	var stalledAt time.Time
	select {
	case stalledAt = <-s.observed:
	case <-time.After(30 * time.Second):
		t.Fatal("no operation of the stalled node's disk hung")
	}

	// The leadership moves to another in-sync replica, and writes resume
	// there, within the bound. The stalled leader acknowledges nothing
	// once its flush hangs: an ack later than half the stall timeout
	// after it (answers already on their way have arrived by then) is the
	// new leader's.
	movedAt, moved := s.leaderMovedBy(stalledAt.Add(bound))
	if !moved {
		p, _ := s.view().Partition("payments", 0)
		t.Fatalf("node %d's disk stalled at %v: within %v it still leads payments-0 or is in its ISR (leader %d, ISR %v)",
			s.stalled, stalledAt.Format("15:04:05.000"), bound, p.Leader, p.ISR)
	}
	from := stalledAt.Add(timeout / 2)
	if pathHint != "" { // its partition log is healthy: it acknowledged until it lost the leadership
		from = movedAt
	}
	resumed, ok := w.firstAckAfter(from, stalledAt.Add(bound))
	if !ok {
		t.Fatalf("node %d's disk stalled at %v: no acks=all write acknowledged by another leader within %v (stall timeout %v + session timeout %v + %v)",
			s.stalled, stalledAt.Format("15:04:05.000"), bound, timeout, node.DefaultSessionTimeout, stallResumeSlack)
	}
	p, _ := s.view().Partition("payments", 0)
	t.Logf("stall → leadership moved %v, → first ack on the new leader (node %d, ISR %v) %v",
		movedAt.Sub(stalledAt).Round(time.Millisecond), p.Leader, p.ISR, resumed.Sub(stalledAt).Round(time.Millisecond))
	select {
	case <-victim.Done():
		t.Fatalf("node %d stopped on a stalled disk: %v", s.stalled, victim.Err())
	default:
	}

	// The stalled node says why it is not ready, once its detector has
	// seen the stall (under load the leadership may move sooner, by a
	// late heartbeat).
	if pathHint == "" {
		pathHint = "payments-0"
	}
	waitFor(t, "the stalled node's detector to see the stall", timeout+time.Second, func() bool {
		return value(t, scrape(t, victim.MetricsAddr()), "paymentlog_disk_stalled") == 1
	})
	code, body := getReadyz(t, victim.MetricsAddr())
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "disk stalled: ") || !strings.Contains(body, pathHint) {
		t.Fatalf("/readyz of the stalled node answered %d %q; want 503 naming the stalled operation on %s", code, body, pathHint)
	}
	e := scrape(t, victim.MetricsAddr())
	if v := value(t, e, "paymentlog_disk_stalled"); v != 1 {
		t.Fatalf("paymentlog_disk_stalled = %v during the stall", v)
	}
	if v := value(t, e, "paymentlog_disk_oldest_inflight_seconds"); v <= timeout.Seconds() {
		t.Fatalf("paymentlog_disk_oldest_inflight_seconds = %v during the stall, want > %v", v, timeout.Seconds())
	}
	// With its heartbeats held back none is answered: it fences itself
	// (refuses writes) after two session timeouts, whether or not it can
	// apply the controller's fence.
	waitFor(t, "the stalled node fenced by itself", 10*time.Second, func() bool {
		return value(t, scrape(t, victim.MetricsAddr()), "paymentlog_broker_fenced") == 1
	})
	w.waitAcked(t, w.count()+100) // the new leader goes on taking writes

	// The stall ends: the node is unfenced and back in the ISR.
	release()
	waitFor(t, "the stalled node unfenced and back in the ISR", 30*time.Second, func() bool {
		img := s.view()
		b, ok := img.Broker(s.stalled)
		p, _ := img.Partition("payments", 0)
		return ok && !b.Fenced && slices.Contains(p.ISR, s.stalled)
	})
	waitFor(t, "paymentlog_disk_stalled back to 0", 10*time.Second, func() bool {
		e := scrape(t, victim.MetricsAddr())
		return value(t, e, "paymentlog_disk_stalled") == 0 && value(t, e, "paymentlog_disk_stalls_total") >= 1
	})
	byOffset := w.stop(t)
	readBackPayments(ctx, t, s.c, byOffset)
	t.Logf("%d records acknowledged once each and read back", len(byOffset))
}

func getReadyz(t *testing.T, addr string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// timedWriter produces "payment-<i>" records to payments-0 with an
// idempotent acks=all producer, 10 at a time, each group flushed before
// the next, and keeps when each was acknowledged.
type timedWriter struct {
	p    *client.Producer
	quit chan struct{}
	done chan error
	mu   struct {
		sync.Mutex
		acks  []timedAck
		acked int
	}
}

type timedAck struct {
	off int64
	err error
	at  time.Time // zero: not acknowledged yet
}

func startTimedWriter(ctx context.Context, t *testing.T, c *client.Client) *timedWriter {
	t.Helper()
	p, err := c.NewProducer(client.ProducerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	w := &timedWriter{p: p, quit: make(chan struct{}), done: make(chan error, 1)}
	go func() { w.done <- w.run(ctx) }()
	return w
}

func (w *timedWriter) run(ctx context.Context) error {
	for {
		select {
		case <-w.quit:
			return nil
		default:
		}
		for range 10 {
			w.mu.Lock()
			i := len(w.mu.acks)
			w.mu.acks = append(w.mu.acks, timedAck{})
			w.mu.Unlock()
			err := w.p.Produce(ctx, &client.Record{Topic: "payments", Value: []byte(fmt.Sprintf("payment-%d", i))}, func(d client.Delivery) {
				w.mu.Lock()
				w.mu.acks[i] = timedAck{off: d.Offset, err: d.Err, at: time.Now()}
				w.mu.acked++
				w.mu.Unlock()
			})
			if err != nil {
				return fmt.Errorf("produce payment-%d: %w", i, err)
			}
		}
		if err := w.p.Flush(ctx); err != nil {
			return err
		}
	}
}

func (w *timedWriter) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mu.acked
}

// waitAcked waits until n records have an outcome.
func (w *timedWriter) waitAcked(t *testing.T, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d records acknowledged", n), 30*time.Second, func() bool { return w.count() >= n })
}

// firstAckAfter waits until deadline for a record acknowledged after t0
// and returns when it was.
func (w *timedWriter) firstAckAfter(t0, deadline time.Time) (time.Time, bool) {
	for {
		w.mu.Lock()
		var first time.Time
		for _, a := range w.mu.acks {
			if a.err == nil && a.at.After(t0) && (first.IsZero() || a.at.Before(first)) {
				first = a.at
			}
		}
		w.mu.Unlock()
		if !first.IsZero() && !first.After(deadline) {
			return first, true
		}
		if time.Now().After(deadline) {
			return time.Time{}, false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stop ends the writer after its group under way and returns the record
// acknowledged at each offset; a record not acknowledged, or an offset
// acknowledged twice, fails the test.
func (w *timedWriter) stop(t *testing.T) map[int64]string {
	t.Helper()
	close(w.quit)
	if err := <-w.done; err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	byOffset := map[int64]string{}
	var errs []string
	for i, a := range w.mu.acks {
		switch {
		case a.err != nil:
			errs = append(errs, fmt.Sprintf("payment-%d: %v", i, a.err))
		case a.at.IsZero():
			errs = append(errs, fmt.Sprintf("payment-%d: no outcome", i))
		default:
			if prev, dup := byOffset[a.off]; dup {
				t.Fatalf("offset %d acknowledged for %q and payment-%d", a.off, prev, i)
			}
			byOffset[a.off] = fmt.Sprintf("payment-%d", i)
		}
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		t.Fatalf("%d records not acknowledged: %s", len(errs), strings.Join(errs[:min(len(errs), 5)], "; "))
	}
	return byOffset
}
