package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"paymentlog/segment"
	"paymentlog/wire"
)

// The order of a pass: due before not due; among the due, overdue
// (past max.compaction.lag.ms) first, then the dirtiest; ties and the
// rest by topic and partition. A log Dirtiness could not rank goes with
// the not due, whatever it said.
func TestCleanOrder(t *testing.T) {
	task := func(topic string, part int32, due, overdue bool, ratio float64) cleanTask {
		return cleanTask{key: tp{topic, part}, ranked: true, d: segment.Dirtiness{Due: due, Overdue: overdue, DirtyRatio: ratio}}
	}
	unranked := task("a", 9, true, true, 1)
	unranked.ranked = false
	want := []cleanTask{
		task("z", 0, true, true, 0.2),  // overdue, dirtiest of them
		task("a", 1, true, true, 0.1),  // overdue
		task("b", 0, true, true, 0.1),  // overdue, same ratio: by topic
		task("z", 1, true, false, 0.9), // the dirtiest of the rest
		task("a", 0, true, false, 0.5),
		task("a", 2, true, false, 0.5),  // same ratio: by partition
		task("a", 3, true, false, 0),    // due for its tombstones, nothing dirty
		task("a", 4, false, false, 0.9), // not due (below min.cleanable.dirty.ratio): by key
		unranked,
		task("b", 1, false, false, 0.1),
	}
	for seed := range 20 {
		got := slices.Clone(want)
		for i := range got { // a deterministic shuffle per seed
			j := (i*7 + seed*3) % len(got)
			got[i], got[j] = got[j], got[i]
		}
		slices.SortFunc(got, cleanOrder)
		if !slices.EqualFunc(got, want, func(x, y cleanTask) bool { return x.key == y.key }) {
			keys := func(ts []cleanTask) (out []string) {
				for _, t := range ts {
					out = append(out, t.key.String())
				}
				return out
			}
			t.Fatalf("seed %d: order %v, want %v", seed, keys(got), keys(want))
		}
	}
}

// produceKeyed writes n records to key, one per batch, over keys keys.
func produceKeyed(t *testing.T, c *testCluster, key tp, n, keys int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range n {
		r, err := c.produce(ctx, key, wire.AcksAll, keyedBatch(segment.CodecNone, rec(fmt.Sprint("k", i%keys), fmt.Sprint(i, bigValue))))
		if err != nil || r.Err != wire.None {
			t.Fatalf("produce to %s: %+v, %v", key, r, err)
		}
	}
}

// With real logs: after a pass that cleaned four partitions, a little
// more is written to one, a lot more to another, a little more to a third
// whose topic's max.compaction.lag.ms has passed (and whose
// min.cleanable.dirty.ratio alone would not clean it), and a little more
// to a fourth whose ratio is not reached. The next pass compacts the
// overdue one first, then the dirtiest, then the other due one, then the
// one not due; Stats report the highest dirty ratio and how far past its
// lag the overdue one is.
func TestCleanerCompactsTheDirtiestFirst(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	c := newTestCluster(t, clusterOptions{nodes: 1, segBytes: retentionSegBytes, cleanerInterval: -1,
		now: func() time.Time { return now }})
	b := c.node(1).b
	keys := []tp{{"payments", 0}, {"payments", 1}, {"payments", 2}, {"payments", 3}}
	clean := CompactionConfig{MinDirtyRatio: 0, DeleteRetention: time.Hour}
	for _, k := range keys {
		c.createPartition(k.topic, k.partition, []int32{1}, 1, 1)
		c.setCleanup(k, CleanupCompact, clean)
		produceKeyed(t, c, k, 40, 5)
	}
	if s := b.CompactNow(context.Background()); s.Ran != 4 || s.Err != nil {
		t.Fatalf("first pass: %+v", s)
	}
	const lag = time.Hour
	c.setCleanup(keys[2], CleanupCompact, CompactionConfig{MinDirtyRatio: 0.99, MaxLag: lag, DeleteRetention: time.Hour})
	c.setCleanup(keys[3], CleanupCompact, CompactionConfig{MinDirtyRatio: 0.99, DeleteRetention: time.Hour})
	for i, n := range []int{12, 60, 12, 12} {
		produceKeyed(t, c, keys[i], n, 5)
	}
	d := map[tp]segment.Dirtiness{}
	for _, k := range keys {
		p := b.partition(k.topic, k.partition)
		o, _, _ := p.compactOptions(now)
		var err error
		if d[k], err = p.log.Dirtiness(o); err != nil {
			t.Fatal(err)
		}
	}
	if !(d[keys[1]].DirtyRatio > d[keys[0]].DirtyRatio && d[keys[0]].Due && !d[keys[3]].Due && d[keys[2]].Overdue &&
		d[keys[2]].DirtyRatio < 0.99 && d[keys[0]].DirtyRatio < 0.99) {
		t.Fatalf("the set-up is not what the test needs: %+v", d)
	}
	calls := hookCompact(c.node(1), func(tp, segment.CompactOptions) (segment.CompactResult, error) {
		return segment.CompactResult{}, nil
	})
	b.CompactNow(context.Background())
	var order []tp
	for _, call := range *calls {
		order = append(order, call.key)
	}
	if want := []tp{keys[2], keys[1], keys[0], keys[3]}; !slices.Equal(order, want) {
		t.Fatalf("compacted %v, want %v (dirtiness %+v)", order, want, d)
	}
	st := b.Stats().Cleaner
	delay := now.Sub(time.UnixMilli(1700000000000)) - lag // keyedBatch's timestamp
	if st.MaxDirtyRatio != d[keys[1]].DirtyRatio || st.MaxCompactionDelay != delay {
		t.Fatalf("stats %+v; want a max dirty ratio of %v and a delay of %v", st, d[keys[1]].DirtyRatio, delay)
	}
}

// Four workers over twelve partitions, passes run back to back from two
// goroutines: every pass gives each partition exactly one Compact call,
// never two at once on one partition, with several partitions in flight
// at once (never more than four) and a quarter of the dedupe buffer each.
// Run it with -race.
func TestCleanerThreadsNeverShareALog(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 1, cleanerInterval: -1})
	b := c.node(1).b
	const threads, parts, passes = 4, 12, 10
	b.cfg.CleanerThreads = threads // no cleaner loop reads it meanwhile
	b.cfg.CleanerDedupeBufferSize = 64 << 20
	for i := range parts {
		k := tp{"payments", int32(i)}
		c.createPartition(k.topic, k.partition, []int32{1}, 1, 1)
		c.setCleanup(k, CleanupCompact, CompactionConfig{MinDirtyRatio: 0.5})
	}
	var mu sync.Mutex
	inFlight := map[tp]bool{}
	count := map[tp]int{}
	most := 0
	together := make(chan struct{}) // closed once two calls overlap
	hookCompact(c.node(1), func(key tp, o segment.CompactOptions) (segment.CompactResult, error) {
		mu.Lock()
		if inFlight[key] {
			t.Errorf("two workers on %s at once", key)
		}
		inFlight[key] = true
		count[key]++
		if n := len(inFlight); n > most {
			most = n
			if n == 2 {
				close(together)
			}
		}
		mu.Unlock()
		if o.MaxMapBytes != 16<<20 {
			t.Errorf("%s: MaxMapBytes %d, want a quarter of 64 MiB", key, o.MaxMapBytes)
		}
		select { // let another worker catch up with this one
		case <-together:
		case <-time.After(5 * time.Second):
			mu.Lock()
			if most < 2 {
				most = 2 // the calls after this one go on: the test has failed
				close(together)
				t.Errorf("%s: no other call in flight within 5s", key)
			}
			mu.Unlock()
		}
		mu.Lock()
		delete(inFlight, key)
		mu.Unlock()
		return segment.CompactResult{}, nil
	})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range passes / 2 {
				if s := b.CompactNow(context.Background()); s.Partitions != parts || s.Err != nil {
					t.Errorf("pass: %+v", s)
				}
			}
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for i := range parts {
		if n := count[tp{"payments", int32(i)}]; n != passes {
			t.Errorf("payments-%d: %d calls in %d passes", i, n, passes)
		}
	}
	if most < 2 || most > threads {
		t.Fatalf("at most %d calls in flight at once, want 2 to %d", most, threads)
	}
}

// fakeTime is a clock whose sleepers wake when it reaches their deadline;
// it moves, to the earliest deadline, only when every call in progress
// (enter, leave) is asleep: time passes as it would for workers that
// spend none computing.
type fakeTime struct {
	mu        sync.Mutex
	cond      *sync.Cond
	now       time.Time
	deadlines []time.Time // of the sleepers not yet woken
	active    int         // calls in progress
	mostAt    int         // the most calls in progress at once
	stop      bool
}

func newFakeTime(now time.Time) *fakeTime {
	f := &fakeTime{now: now}
	f.cond = sync.NewCond(&f.mu)
	go f.drive()
	return f
}

func (f *fakeTime) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeTime) enter() {
	f.mu.Lock()
	f.active++
	f.mostAt = max(f.mostAt, f.active)
	f.mu.Unlock()
	f.cond.Broadcast()
}

func (f *fakeTime) leave() {
	f.mu.Lock()
	f.active--
	f.mu.Unlock()
	f.cond.Broadcast()
}

// sleep blocks until the clock is d later (ctx is not watched).
func (f *fakeTime) sleep(_ context.Context, d time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	until := f.now.Add(d)
	f.deadlines = append(f.deadlines, until)
	f.cond.Broadcast()
	for f.now.Before(until) {
		f.cond.Wait()
	}
	return nil
}

// drive moves the clock to the earliest deadline whenever every call in
// progress sleeps, waking (and forgetting) the sleepers due by then.
func (f *fakeTime) drive() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for !f.stop {
		if len(f.deadlines) == 0 || len(f.deadlines) < f.active {
			f.cond.Wait()
			continue
		}
		f.now = slices.MinFunc(f.deadlines, func(a, b time.Time) int { return a.Compare(b) })
		f.deadlines = slices.DeleteFunc(f.deadlines, func(d time.Time) bool { return !d.After(f.now) })
		f.cond.Broadcast()
	}
}

func (f *fakeTime) close() {
	f.mu.Lock()
	f.stop = true
	f.mu.Unlock()
	f.cond.Broadcast()
}

// Two workers compacting two partitions at once share the node's
// --log-cleaner-io-max-bytes-per-second: on a clock that moves only when
// both sleep, what they read and wrote together stays within the rate
// plus the bucket's second and one step each (not twice the rate, as a
// bucket per worker would allow), and takes no longer than the rate
// needs.
func TestCleanerThreadsShareTheThrottle(t *testing.T) {
	const rate, step, steps = 10_000, 1000, 100
	clock := newFakeTime(time.UnixMilli(1_800_000_000_000))
	defer clock.close()
	c := newTestCluster(t, clusterOptions{nodes: 1, cleanerInterval: -1, cleanerIO: rate, now: clock.Now})
	b := c.node(1).b
	b.cfg.CleanerThreads = 2 // no cleaner loop reads it meanwhile
	for i := range 2 {
		k := tp{"payments", int32(i)}
		c.createPartition(k.topic, k.partition, []int32{1}, 1, 1)
		c.setCleanup(k, CleanupCompact, CompactionConfig{MinDirtyRatio: 0.5})
	}
	sleep := clock.sleep
	b.hooks.cleanerSleep.Store(&sleep)
	var entered sync.WaitGroup
	entered.Add(2)
	both := make(chan struct{})
	go func() { entered.Wait(); close(both) }()
	hookCompact(c.node(1), func(key tp, o segment.CompactOptions) (segment.CompactResult, error) {
		clock.enter()
		defer clock.leave()
		entered.Done()
		select { // both in flight before either reads: the clock waits for both
		case <-both:
		case <-time.After(5 * time.Second):
			t.Errorf("%s: the other partition's call did not start within 5s", key)
		}
		for range steps {
			if err := o.Throttle(context.Background(), step); err != nil {
				return segment.CompactResult{}, err
			}
		}
		return segment.CompactResult{Ran: true}, nil
	})
	start := clock.Now()
	if s := b.CompactNow(context.Background()); s.Ran != 2 || s.Err != nil {
		t.Fatalf("pass: %+v", s)
	}
	took := clock.Now().Sub(start)
	const total = 2 * steps * step
	lo := time.Duration(float64(total-rate-2*step) / rate * float64(time.Second))
	hi := time.Duration(float64(total) / rate * float64(time.Second))
	if took < lo || took > hi {
		t.Fatalf("%d bytes in %v on the clock, want %v to %v at %d bytes/s", total, took, lo, hi, rate)
	}
	clock.mu.Lock()
	together := clock.mostAt
	clock.mu.Unlock()
	if together != 2 {
		t.Fatalf("at most %d partitions compacted at once, want 2", together)
	}
	if got := b.Stats().CleanerThrottleTime; got < lo {
		t.Fatalf("throttle time counted %v", got)
	}
}

// Stats of the last pass: its longest Compact call on the broker's clock,
// the partitions whose call failed (the quiet errors not counted), and
// the time since it ended; the pass that tries a failed one again (after
// one pass set aside) and succeeds clears them.
func TestCleanerStats(t *testing.T) {
	var mu sync.Mutex
	now := time.UnixMilli(1_800_000_000_000)
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	c := newTestCluster(t, clusterOptions{nodes: 1, cleanerInterval: -1,
		now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }})
	b := c.node(1).b
	for i := range 4 {
		k := tp{"payments", int32(i)}
		c.createPartition(k.topic, k.partition, []int32{1}, 1, 1)
		c.setCleanup(k, CleanupCompact, CompactionConfig{MinDirtyRatio: 0.5})
	}
	advance(7 * time.Second)
	if st := b.Stats().Cleaner; st.SinceLastRun != 7*time.Second || st.Uncleanable != 0 || st.MaxCleanTime != 0 {
		t.Fatalf("before any pass: %+v", st)
	}
	fail := true
	hookCompact(c.node(1), func(key tp, o segment.CompactOptions) (segment.CompactResult, error) {
		switch {
		case key.partition == 1:
			advance(3 * time.Second)
		case key.partition == 2 && fail:
			return segment.CompactResult{}, errors.New("boom")
		case key.partition == 3 && fail:
			return segment.CompactResult{}, segment.ErrClosed
		default:
			advance(time.Second)
		}
		return segment.CompactResult{}, nil
	})
	if s := b.CompactNow(context.Background()); s.Failed != 1 {
		t.Fatalf("pass: %+v", s)
	}
	advance(5 * time.Second)
	if st := b.Stats().Cleaner; st.MaxCleanTime != 3*time.Second || st.Uncleanable != 1 || st.SinceLastRun != 5*time.Second {
		t.Fatalf("after a pass with a failure: %+v", st)
	}
	fail = false
	if s := b.CompactNow(context.Background()); s.SetAside != 1 || b.Stats().Cleaner.Uncleanable != 1 {
		t.Fatalf("the pass after the failure: %+v, %+v", s, b.Stats().Cleaner)
	}
	b.CompactNow(context.Background())
	if st := b.Stats().Cleaner; st.MaxCleanTime != 3*time.Second || st.Uncleanable != 0 || st.SinceLastRun != 0 {
		t.Fatalf("after a pass without: %+v", st)
	}
}

// SetCleanerThreads (the cluster's log.cleaner.threads) takes effect at
// the next pass: with 3, a pass over six partitions has three calls in
// flight at once, never more, and each call gets a third of the dedupe
// buffer, even after the count is set to 1 during the pass; the next pass
// then runs one call at a time with the whole buffer. A count the buffer
// cannot give 1 MiB a thread is clamped (and logged), and 0 brings back
// Config.CleanerThreads.
func TestCleanerThreadsChangeAtTheNextPass(t *testing.T) {
	logs := &syncBuffer{}
	c := newTestCluster(t, clusterOptions{nodes: 1, cleanerInterval: -1,
		logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	b := c.node(1).b
	b.cfg.CleanerThreads = 2 // no cleaner loop reads it meanwhile
	b.cfg.CleanerDedupeBufferSize = 6 << 20
	for i := range 6 {
		k := tp{"payments", int32(i)}
		c.createPartition(k.topic, k.partition, []int32{1}, 1, 1)
		c.setCleanup(k, CleanupCompact, CompactionConfig{MinDirtyRatio: 0.5})
	}
	// pass runs a pass whose calls wait (5 s at most) until want of them
	// are in flight at once, and returns the most in flight and the map
	// sizes the calls got; during is called by the first call.
	pass := func(want int, during func()) (most int, maps []int64) {
		t.Helper()
		var mu sync.Mutex
		cond := sync.NewCond(&mu)
		inFlight, first := 0, true
		hookCompact(c.node(1), func(key tp, o segment.CompactOptions) (segment.CompactResult, error) {
			mu.Lock()
			defer mu.Unlock()
			if first {
				first = false
				during()
			}
			inFlight++
			most = max(most, inFlight)
			maps = append(maps, o.MaxMapBytes)
			cond.Broadcast()
			deadline := time.AfterFunc(5*time.Second, cond.Broadcast)
			defer deadline.Stop()
			start := time.Now()
			for most < want && time.Since(start) < 5*time.Second {
				cond.Wait()
			}
			inFlight--
			return segment.CompactResult{}, nil
		})
		if s := b.CompactNow(context.Background()); s.Partitions != 6 || s.Err != nil {
			t.Fatalf("pass: %+v", s)
		}
		return most, maps
	}
	if b.CleanerThreads() != 2 {
		t.Fatalf("threads %d before any change, want Config's 2", b.CleanerThreads())
	}
	b.SetCleanerThreads(3)
	most, maps := pass(3, func() { b.SetCleanerThreads(1) })
	if most != 3 {
		t.Fatalf("%d calls in flight at once with 3 threads", most)
	}
	for _, m := range maps {
		if m != 2<<20 {
			t.Fatalf("map sizes %v with 3 threads, want a third of 6 MiB each", maps)
		}
	}
	most, maps = pass(1, func() {})
	if most != 1 || !slices.Equal(maps, []int64{6 << 20, 6 << 20, 6 << 20, 6 << 20, 6 << 20, 6 << 20}) {
		t.Fatalf("the pass after the change to 1: %d in flight, maps %v", most, maps)
	}
	b.SetCleanerThreads(100)
	if got := b.CleanerThreads(); got != 6 {
		t.Fatalf("100 threads with a 6 MiB buffer: %d, want 6", got)
	}
	if n := logs.count("level=WARN", "log cleaner threads clamped", "asked=100", "threads=6"); n != 1 {
		t.Fatalf("the clamp was logged %d times:\n%s", n, logs.buf.String())
	}
	if most, _ := pass(6, func() {}); most != 6 {
		t.Fatalf("%d calls in flight at once with 6 threads", most)
	}
	b.SetCleanerThreads(0)
	if got := b.CleanerThreads(); got != 2 {
		t.Fatalf("threads %d once unset, want Config's 2", got)
	}
	if n := logs.count("level=INFO", "log cleaner threads changed"); n != 4 {
		t.Fatalf("%d changes logged, want 4 (2→3→1→6→2):\n%s", n, logs.buf.String())
	}
}
