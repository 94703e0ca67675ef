package client

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// groupRun runs GroupConsumers of one group, each polling in a goroutine of
// its own, and checks what they read together: who reads each partition
// (from OnAssigned to OnRevoked), that no partition is read by two members
// at once, and that each returns records only of partitions it reads.
type groupRun struct {
	tb testing.TB
	c  *Client

	mu         sync.Mutex
	owner      map[TopicPartition]string  // the member reading each partition
	read       map[TopicPartition][]int64 // offsets returned by any member, in order
	revoked    map[string][]TopicPartition
	violations []string
}

func newGroupRun(tb testing.TB, c *Client) *groupRun {
	return &groupRun{tb: tb, c: c, owner: map[TopicPartition]string{}, read: map[TopicPartition][]int64{},
		revoked: map[string][]TopicPartition{}}
}

// runningMember is one GroupConsumer polling in its goroutine until stop.
type runningMember struct {
	name string
	g    *GroupConsumer
	stop chan struct{}
	done chan error // Poll's error, else Close's
	// hold, held by a test, stops the polls (the application stalls)
	// once the Poll running has returned.
	hold sync.Mutex
}

// start joins group g as member name (cfg's Group, Topics and callbacks
// are set here) and polls until stopped.
func (r *groupRun) start(name string, cfg GroupConsumerConfig) *runningMember {
	r.tb.Helper()
	cfg.Group, cfg.Topics, cfg.ClientID = "g", []string{"t"}, name
	cfg.From = SeekBeginning
	if cfg.Consumer.MaxWait == 0 {
		cfg.Consumer.MaxWait = 20 * time.Millisecond
	}
	cfg.OnAssigned = func(tps []TopicPartition) { r.assigned(name, tps) }
	cfg.OnRevoked = func(tps []TopicPartition) { r.released(name, tps) }
	g, err := r.c.NewGroupConsumer(testCtx(r.tb), cfg)
	if err != nil {
		r.tb.Fatalf("member %s: %v", name, err)
	}
	m := &runningMember{name: name, g: g, stop: make(chan struct{}), done: make(chan error, 1)}
	go func() {
		ctx := context.Background()
		for {
			select {
			case <-m.stop:
				m.done <- g.Close(ctx)
				return
			default:
			}
			m.hold.Lock()
			m.hold.Unlock() //nolint:staticcheck // only waits while a test holds it
			msgs, err := g.Poll(ctx)
			if err != nil {
				g.Close(ctx)
				m.done <- fmt.Errorf("member %s: poll: %w", name, err)
				return
			}
			r.returned(name, msgs)
		}
	}()
	r.tb.Cleanup(func() { m.close(r.tb) })
	return m
}

// close stops m's polls and closes it (once), failing the test on an error.
func (m *runningMember) close(tb testing.TB) {
	tb.Helper()
	select {
	case <-m.stop:
		return
	default:
	}
	close(m.stop)
	if err := <-m.done; err != nil {
		tb.Errorf("member %s: %v", m.name, err)
	}
}

func (r *groupRun) assigned(name string, tps []TopicPartition) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, tp := range tps {
		if o, ok := r.owner[tp]; ok {
			r.violations = append(r.violations, fmt.Sprintf("%s started %s while %s reads it", name, tp, o))
		}
		r.owner[tp] = name
	}
}

func (r *groupRun) released(name string, tps []TopicPartition) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, tp := range tps {
		if r.owner[tp] != name {
			r.violations = append(r.violations, fmt.Sprintf("%s released %s, read by %q", name, tp, r.owner[tp]))
		}
		delete(r.owner, tp)
	}
	r.revoked[name] = append(r.revoked[name], tps...)
}

func (r *groupRun) returned(name string, msgs []Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range msgs {
		tp := TopicPartition{m.Topic, m.Partition}
		if r.owner[tp] != name {
			r.violations = append(r.violations, fmt.Sprintf("%s returned %s offset %d, read by %q", name, tp, m.Offset, r.owner[tp]))
		}
		r.read[tp] = append(r.read[tp], m.Offset)
	}
}

// total is how many records the members returned in all.
func (r *groupRun) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, offs := range r.read {
		n += len(offs)
	}
	return n
}

// offsets returns the offsets read of tp, in the order returned.
func (r *groupRun) offsets(tp TopicPartition) []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.read[tp])
}

func (r *groupRun) revokedFrom(name string) []TopicPartition {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.revoked[name])
}

// twoMembers starts members a (with aCfg) and b, waits until they read 2
// of t's 4 partitions each, then produces 5 records to each partition and
// waits until the 20 are read.
func (r *groupRun) twoMembers(c *Client, aCfg GroupConsumerConfig) (a, b *runningMember) {
	r.tb.Helper()
	a = r.start("a", aCfg)
	b = r.start("b", GroupConsumerConfig{})
	waitFor(r.tb, "a and b split the partitions", split(2, a, b))
	produceEach(r.tb, c, 4, 5)
	waitFor(r.tb, "20 records read", func() bool { return r.total() == 20 })
	return a, b
}

// readEach reports whether offsets 0 to n-1 of each of t's first parts
// partitions were returned, at least once each.
func (r *groupRun) readEach(parts int32, n int64) func() bool {
	return func() bool {
		for p := range parts {
			got := r.offsets(TopicPartition{"t", p})
			for _, o := range seq(0, n) {
				if !slices.Contains(got, o) {
					return false
				}
			}
		}
		return true
	}
}

// check fails the test on any violation seen.
func (r *groupRun) check() {
	r.tb.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.violations) > 0 {
		r.tb.Fatalf("%d violations, first %s", len(r.violations), r.violations[0])
	}
}

// waitFor waits up to 15 s for cond, failing the test with what after.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("still not %s after 15 s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// split reports whether every member reads n partitions, stable.
func split(n int, ms ...*runningMember) func() bool {
	return func() bool {
		for _, m := range ms {
			if !m.g.Stable() || len(m.g.Assignment()) != n {
				return false
			}
		}
		return true
	}
}

// produceEach produces n records to each of parts partitions of t.
func produceEach(tb testing.TB, c *Client, parts, n int) {
	tb.Helper()
	for p := range parts {
		vals := make([]string, n)
		for i := range vals {
			vals[i] = fmt.Sprintf("p%d-%d", p, i)
		}
		produceValues(tb, c, "t", int32(p), vals...)
	}
}

// seq is from, from+1, ..., to-1.
func seq(from, to int64) []int64 {
	var out []int64
	for o := from; o < to; o++ {
		out = append(out, o)
	}
	return out
}
