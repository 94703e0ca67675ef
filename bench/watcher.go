package bench

import (
	"context"
	"slices"
	"sync"
	"time"

	"paymentlog/quic"
	"paymentlog/wire"
)

// caller is the transport operation the bench's metadata calls need
// (*quic.Endpoint has it).
type caller interface {
	Call(ctx context.Context, addr string, t quic.FrameType, req, resp any) error
}

// view is one metadata answer and when it arrived.
type view struct {
	at   time.Time
	from string
	md   *wire.MetadataResponse
}

// watcher polls every node's metadata on its own goroutine every interval
// and keeps the history of the cluster's metadata as the newest answers
// reveal it: a view is kept when its metadata offset is higher than every
// earlier one. A dead or paused node only slows its own poller. Event times
// (fenced, new leader, ISR change) are the arrival times of the first answer
// that shows them, so they lag the commit by at most one interval plus one
// request.
//
// Lifecycle: newWatcher starts polling; close stops it and waits.
type watcher struct {
	tr       caller
	interval time.Duration
	timeout  time.Duration
	topics   []string

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu struct {
		sync.Mutex
		polled  map[string]bool
		views   []view        // offsets strictly increasing
		changed chan struct{} // closed and replaced when views grows
		errs    int
	}
}

func newWatcher(ctx context.Context, tr caller, addrs []string, topics []string, interval time.Duration) *watcher {
	w := &watcher{tr: tr, interval: interval, timeout: max(250*time.Millisecond, 20*interval), topics: topics}
	w.ctx, w.cancel = context.WithCancel(ctx)
	w.mu.polled = map[string]bool{}
	w.mu.changed = make(chan struct{})
	for _, a := range addrs {
		w.pollLocked(a)
	}
	return w
}

// pollLocked starts a poller for addr unless one runs. Call with w.mu held
// (or before the watcher is shared).
func (w *watcher) pollLocked(addr string) {
	if addr == "" || w.mu.polled[addr] {
		return
	}
	w.mu.polled[addr] = true
	w.wg.Add(1)
	go w.poll(addr)
}

func (w *watcher) poll(addr string) {
	defer w.wg.Done()
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		ctx, cancel := context.WithTimeout(w.ctx, w.timeout)
		var md wire.MetadataResponse
		err := w.tr.Call(quic.Idempotent(ctx), addr, wire.TypeMetadata, &wire.MetadataRequest{Topics: w.topics}, &md)
		cancel()
		if err == nil && md.Err == wire.None {
			w.offer(view{at: time.Now(), from: addr, md: &md})
		} else {
			w.mu.Lock()
			w.mu.errs++
			w.mu.Unlock()
		}
		select {
		case <-w.ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (w *watcher) offer(v view) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := len(w.mu.views); n > 0 && v.md.MetadataOffset <= w.mu.views[n-1].md.MetadataOffset {
		return
	}
	w.mu.views = append(w.mu.views, v)
	for _, b := range v.md.Brokers {
		w.pollLocked(b.Addr)
	}
	close(w.mu.changed)
	w.mu.changed = make(chan struct{})
}

// latest returns the newest view (nil before the first answer).
func (w *watcher) latest() *view {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.mu.views) == 0 {
		return nil
	}
	v := w.mu.views[len(w.mu.views)-1]
	return &v
}

// waitFor returns the first view that arrived at or after since and satisfies
// pred, waiting for new views until ctx ends.
func (w *watcher) waitFor(ctx context.Context, since time.Time, pred func(*wire.MetadataResponse) bool) (view, error) {
	i := 0
	for {
		w.mu.Lock()
		views := w.mu.views
		changed := w.mu.changed
		w.mu.Unlock()
		for ; i < len(views); i++ {
			if !views[i].at.Before(since) && pred(views[i].md) {
				return views[i], nil
			}
		}
		select {
		case <-ctx.Done():
			return view{}, ctx.Err()
		case <-changed:
		}
	}
}

// waitState waits until the newest view satisfies pred (whenever it arrived).
func (w *watcher) waitState(ctx context.Context, pred func(*wire.MetadataResponse) bool) (view, error) {
	for {
		w.mu.Lock()
		var v *view
		if n := len(w.mu.views); n > 0 {
			v = &w.mu.views[n-1]
		}
		changed := w.mu.changed
		w.mu.Unlock()
		if v != nil && pred(v.md) {
			return *v, nil
		}
		select {
		case <-ctx.Done():
			return view{}, ctx.Err()
		case <-changed:
		}
	}
}

// close stops the pollers and waits for them.
func (w *watcher) close() {
	w.cancel()
	w.wg.Wait()
}

// Changes counts metadata transitions seen between consecutive views.
type Changes struct {
	ISRShrinks    int `json:"isr_shrinks"`
	ISRExpands    int `json:"isr_expands"`
	LeaderChanges int `json:"leader_changes"`
	Fencings      int `json:"fencings"` // also those between two polls (fencedBetween)
	Controllers   int `json:"controller_changes"`
	// Unseen counts partition changes that fell between two views: every
	// committed change bumps the partition epoch by one, so an epoch that
	// moved by more than the views show (an ISR shrunk and re-expanded
	// between two polls looks like no change at all) hides that many.
	Unseen int `json:"unseen_partition_changes"`
}

// changes counts transitions among the views that arrived in [from, to],
// compared with the last view before from.
func (w *watcher) changes(from, to time.Time) Changes {
	w.mu.Lock()
	views := w.mu.views
	w.mu.Unlock()
	var c Changes
	var prev *wire.MetadataResponse
	for i := range views {
		v := &views[i]
		if v.at.Before(from) {
			prev = v.md
			continue
		}
		if v.at.After(to) {
			break
		}
		if prev != nil {
			c.add(diffViews(prev, v.md))
		}
		prev = v.md
	}
	return c
}

func (c *Changes) add(o Changes) {
	c.ISRShrinks += o.ISRShrinks
	c.ISRExpands += o.ISRExpands
	c.LeaderChanges += o.LeaderChanges
	c.Fencings += o.Fencings
	c.Controllers += o.Controllers
	c.Unseen += o.Unseen
}

// diffViews counts what changed from a to b.
func diffViews(a, b *wire.MetadataResponse) Changes {
	var c Changes
	if a.ControllerID != b.ControllerID && b.ControllerID >= 0 {
		c.Controllers++
	}
	for _, bb := range b.Brokers {
		if ab, ok := brokerOf(a, bb.ID); ok && fencedBetween(ab, bb) {
			c.Fencings++
		}
	}
	for _, bt := range b.Topics {
		for _, bp := range bt.Partitions {
			ap, ok := partitionOf(a, bt.Name, bp.Partition)
			if !ok {
				continue
			}
			for _, id := range ap.ISR {
				if !slices.Contains(bp.ISR, id) {
					c.ISRShrinks++
				}
			}
			for _, id := range bp.ISR {
				if !slices.Contains(ap.ISR, id) {
					c.ISRExpands++
				}
			}
			seen := 0
			if !slices.Equal(sorted(ap.ISR), sorted(bp.ISR)) || ap.Leader != bp.Leader || ap.LeaderEpoch != bp.LeaderEpoch {
				seen = 1 // one change at least (a change may move both)
			}
			if ap.LeaderEpoch != bp.LeaderEpoch || ap.Leader != bp.Leader {
				c.LeaderChanges++
			}
			c.Unseen += max(0, int(bp.PartitionEpoch-ap.PartitionEpoch)-seen)
		}
	}
	return c
}

// fencedBetween reports whether broker a (an earlier view) was fenced by
// the time of b (a later view of the same broker id). The states alone miss
// a broker fenced and unfenced between two polls, which no partition epoch
// shows when it was in no ISR; every fencing moves FencedAt, and a process
// restart brings a new incarnation (the old one fenced by its session's
// expiry or by the new registration):
//
//   - alive in a: fenced in b, a new incarnation, or a new FencedAt;
//   - fenced in a: the same incarnation fenced again (a new FencedAt), so it
//     was unfenced in between. A new incarnation alone is a restart of a
//     fenced broker: its registration fences nobody alive.
//
// Several fencings between two views count as one. A FencedAt of 0 (a node
// older than the field answered one of the views) compares as unchanged.
func fencedBetween(a, b wire.BrokerInfo) bool {
	refenced := a.FencedAt != 0 && b.FencedAt != 0 && b.FencedAt != a.FencedAt
	if a.State != "fenced" {
		return b.State == "fenced" || b.Incarnation != a.Incarnation || refenced
	}
	return b.Incarnation == a.Incarnation && refenced
}

// sorted returns a sorted copy of ids.
func sorted(ids []int32) []int32 {
	s := slices.Clone(ids)
	slices.Sort(s)
	return s
}

func brokerOf(md *wire.MetadataResponse, id int32) (wire.BrokerInfo, bool) {
	for _, b := range md.Brokers {
		if b.ID == id {
			return b, true
		}
	}
	return wire.BrokerInfo{}, false
}

func partitionOf(md *wire.MetadataResponse, topic string, p int32) (wire.PartitionMetadata, bool) {
	for _, t := range md.Topics {
		if t.Name != topic || t.Err != wire.None {
			continue
		}
		for _, pm := range t.Partitions {
			if pm.Partition == p {
				return pm, true
			}
		}
	}
	return wire.PartitionMetadata{}, false
}

// inSync reports whether every partition of topic has a leader and a full
// ISR (isrFull).
func inSync(md *wire.MetadataResponse, topic string) bool {
	for _, t := range md.Topics {
		if t.Name != topic {
			continue
		}
		if t.Err != wire.None || len(t.Partitions) == 0 {
			return false
		}
		for _, p := range t.Partitions {
			if p.Leader < 0 || !isrFull(p) {
				return false
			}
		}
		return true
	}
	return false
}

// isrFull reports whether the partition's ISR holds exactly its replicas:
// every replica is in the ISR and every ISR member is a replica. Equal
// lengths are not enough: ISR [1 2 2] or [1 2 4] of replicas [1 2 3] leaves
// replica 3 out.
func isrFull(p wire.PartitionMetadata) bool {
	for _, id := range p.Replicas {
		if !slices.Contains(p.ISR, id) {
			return false
		}
	}
	for _, id := range p.ISR {
		if !slices.Contains(p.Replicas, id) {
			return false
		}
	}
	return len(p.Replicas) > 0
}

// allAlive reports whether a controller is elected and every broker is alive.
func allAlive(md *wire.MetadataResponse) bool {
	if md.ControllerID < 0 || len(md.Brokers) == 0 {
		return false
	}
	for _, b := range md.Brokers {
		if b.State != "alive" {
			return false
		}
	}
	return true
}

// wireMetadata is the metadata answer the watcher keeps.
type wireMetadata = wire.MetadataResponse

// quietFor waits until no new metadata has appeared for d (the cluster has
// settled), or until limit passes, whichever is first.
func (w *watcher) quietFor(ctx context.Context, d, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		v := w.latest()
		var age time.Duration
		if v != nil {
			age = time.Since(v.at)
		}
		if v != nil && age >= d {
			return
		}
		wait := d - age
		if rem := time.Until(deadline); wait > rem {
			wait = rem
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}
