package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"paymentlog/segment"
	"paymentlog/wire"
)

// snapshot is one immutable view of the cluster metadata as a node reported it.
type snapshot struct {
	controller int32
	offset     int64 // the answering node's metadata offset
	brokers    map[int32]wire.BrokerInfo
	topics     map[string]*wire.TopicMetadata // Partitions sorted by partition id
	maxBytes   map[string]int                 // max.message.bytes of the topics that set it
	from       string
	fetched    time.Time
}

func newSnapshot(r *wire.MetadataResponse, from string, now time.Time) *snapshot {
	s := &snapshot{
		controller: r.ControllerID,
		offset:     r.MetadataOffset,
		brokers:    make(map[int32]wire.BrokerInfo, len(r.Brokers)),
		topics:     make(map[string]*wire.TopicMetadata, len(r.Topics)),
		from:       from,
		fetched:    now,
	}
	for _, b := range r.Brokers {
		s.brokers[b.ID] = b
	}
	for i := range r.Topics {
		t := r.Topics[i]
		if t.Err != wire.None {
			continue
		}
		sort.Slice(t.Partitions, func(a, b int) bool { return t.Partitions[a].Partition < t.Partitions[b].Partition })
		s.topics[t.Name] = &t
		limit := int(t.MaxMessageBytes)
		if v, ok := t.Configs["max.message.bytes"]; ok && limit == 0 {
			// An older node: the topic's own key only.
			limit, _ = strconv.Atoi(v)
		}
		if limit >= segment.HeaderSize {
			if s.maxBytes == nil {
				s.maxBytes = map[string]int{}
			}
			s.maxBytes[t.Name] = limit
		}
	}
	return s
}

// leads reports whether s names leader as the partition's leader at epoch.
func (s *snapshot) leads(topic string, p, leader, epoch int32) bool {
	pm, ok := s.partition(topic, p)
	return ok && pm.Leader == leader && pm.LeaderEpoch == epoch
}

// maxMessageBytes is the largest batch the topic takes (its
// max.message.bytes, else the cluster's message.max.bytes), 0 when neither
// is set or the topic is unknown. Producers ask for every record.
func (s *snapshot) maxMessageBytes(topic string) int {
	if s == nil {
		return 0
	}
	return s.maxBytes[topic]
}

// partition returns a partition's metadata.
func (s *snapshot) partition(topic string, p int32) (wire.PartitionMetadata, bool) {
	if s == nil {
		return wire.PartitionMetadata{}, false
	}
	t, ok := s.topics[topic]
	if !ok {
		return wire.PartitionMetadata{}, false
	}
	i := sort.Search(len(t.Partitions), func(i int) bool { return t.Partitions[i].Partition >= p })
	if i < len(t.Partitions) && t.Partitions[i].Partition == p {
		return t.Partitions[i], true
	}
	return wire.PartitionMetadata{}, false
}

// addr returns a broker's address.
func (s *snapshot) addr(id int32) (string, bool) {
	if s == nil {
		return "", false
	}
	b, ok := s.brokers[id]
	if !ok || b.Addr == "" {
		return "", false
	}
	return b.Addr, true
}

// brokerList returns brokers sorted by id.
func (s *snapshot) brokerList() []wire.BrokerInfo {
	out := make([]wire.BrokerInfo, 0, len(s.brokers))
	for _, b := range s.brokers {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// leader describes where to send a partition's requests.
type leader struct {
	id    int32
	epoch int32
	addr  string
}

// leaderOf returns the partition's leader, ok=false if the partition is
// unknown, offline, or its leader's address is unknown.
func (s *snapshot) leaderOf(topic string, p int32) (leader, bool) {
	pm, ok := s.partition(topic, p)
	if !ok || pm.Leader < 0 {
		return leader{id: -1}, false
	}
	a, ok := s.addr(pm.Leader)
	if !ok {
		return leader{id: pm.Leader, epoch: pm.LeaderEpoch}, false
	}
	return leader{id: pm.Leader, epoch: pm.LeaderEpoch, addr: a}, true
}

// metadata caches the newest snapshot and refreshes it on demand, one
// refresh at a time (concurrent callers share it).
type metadata struct {
	c    *Client
	snap atomic.Pointer[snapshot]

	mu struct {
		sync.Mutex
		inflight  *refreshCall
		preferred string        // the last node whose answer was news ("" after one that was not)
		rotate    int           // answers that were not news: where the broker list starts
		rejected  int           // answers refused as older than the cached snapshot since one was taken
		changed   chan struct{} // closed and replaced when a snapshot is stored
		// noWatch are nodes that answered a watch at once without news:
		// older builds that ignore the long poll (see watch).
		noWatch   map[string]bool
		watchTurn int             // watches that waited in vain: which eligible node the next asks
		watches   map[string]bool // nodes a watch runs at
	}
	watchCount atomic.Int32 // len(mu.watches), read without the lock
}

type refreshCall struct {
	done  chan struct{}
	err   error
	hedge time.Duration // how long each node gets before the next is asked too
}

func newMetadata(c *Client) *metadata {
	m := &metadata{c: c}
	m.mu.changed = make(chan struct{})
	return m
}

// changed returns a channel closed when the next snapshot is stored.
func (m *metadata) changed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.changed
}

// current returns the cached snapshot, or nil before the first refresh.
func (m *metadata) current() *snapshot { return m.snap.Load() }

// get returns the cached snapshot, refreshing first if there is none.
func (m *metadata) get(ctx context.Context) (*snapshot, error) {
	if s := m.current(); s != nil {
		return s, nil
	}
	if err := m.refresh(ctx); err != nil {
		return nil, err
	}
	return m.current(), nil
}

// refresh fetches new metadata (joining a refresh already under way) and
// waits for it until ctx ends.
func (m *metadata) refresh(ctx context.Context) error {
	return m.refreshHedged(ctx, m.c.cfg.HedgeDelay)
}

// refreshHedged is refresh with its own hedge delay (refreshIfOlderHedged
// says when a short one is worth it).
func (m *metadata) refreshHedged(ctx context.Context, hedge time.Duration) error {
	call := m.start(hedge)
	select {
	case <-call.done:
		return call.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// refreshIfOlder starts a background refresh when the snapshot is older than
// age and none is running. It never blocks.
func (m *metadata) refreshIfOlder(age time.Duration) {
	m.refreshIfOlderHedged(age, m.c.cfg.HedgeDelay)
}

// refreshIfOlderHedged is refreshIfOlder with its own hedge delay. A producer
// whose request stalls uses a short one: the node it would ask first (the
// last one that answered) may be the leader that just died, and waiting
// HedgeDelay on it would hold the discovery of the new leader up that long.
func (m *metadata) refreshIfOlderHedged(age, hedge time.Duration) {
	if s := m.current(); s != nil && time.Since(s.fetched) < age {
		return
	}
	m.start(hedge)
}

// start begins a refresh, or joins the one under way (with its hedge delay).
func (m *metadata) start(hedge time.Duration) *refreshCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.inflight != nil {
		return m.mu.inflight
	}
	call := &refreshCall{done: make(chan struct{}), hedge: hedge}
	m.mu.inflight = call
	go m.run(call)
	return call
}

func (m *metadata) run(call *refreshCall) {
	ctx, cancel := m.backgroundCtx(m.c.cfg.MetadataTimeout)
	defer cancel()
	resp, from, err := m.fetch(ctx, call.hedge)
	m.mu.Lock()
	if err == nil {
		m.storeLocked(resp, from)
	}
	m.mu.inflight = nil
	m.mu.Unlock()
	call.err = err
	close(call.done)
}

// backgroundCtx is a context for a background request of the metadata
// cache: it ends after d or when the client closes.
func (m *metadata) backgroundCtx(d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	go func() {
		select {
		case <-m.c.closed:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// errStaleMetadata is a node's answer older than the cached snapshot.
var errStaleMetadata = errors.New("client: metadata older than the cached view")

// refuseStale reports whether an answer is older than the cached snapshot
// (a lagging node, or one cut off from the controller) and is to be
// refused; after three refused answers in a row one is taken anyway (the
// cluster may have been recreated).
func (m *metadata) refuseStale(resp *wire.MetadataResponse) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := m.snap.Load()
	if cur == nil || resp.MetadataOffset >= cur.offset || m.mu.rejected >= 3 {
		return false
	}
	m.mu.rejected++
	return true
}

// storeLocked installs a response (fetch has refused stale ones). The node
// that gave it is asked first next time if its answer was news (a newer
// metadata offset than the cache's); if it was not, the next refresh starts
// at the next broker instead: a node cut off from the controller answers
// fast with the image the client already has, and asked first every time,
// it kept the client on the leaders it last knew (refreshes are asked for
// because something looks wrong).
func (m *metadata) storeLocked(resp *wire.MetadataResponse, from string) {
	if cur := m.snap.Load(); cur == nil || resp.MetadataOffset > cur.offset {
		m.mu.preferred = from
	} else {
		m.mu.preferred = ""
		m.mu.rotate++
	}
	m.mu.rejected = 0
	m.snap.Store(newSnapshot(resp, from, time.Now()))
	close(m.mu.changed)
	m.mu.changed = make(chan struct{})
}

// candidates lists nodes to ask: the preferred one (see storeLocked), alive
// brokers, fenced brokers (both in id order, rotated by the answers that
// were not news), then the bootstrap list.
func (m *metadata) candidates() []string {
	seen := map[string]bool{}
	var out []string
	add := func(a string) {
		if a != "" && !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	m.mu.Lock()
	add(m.mu.preferred)
	rotate := m.mu.rotate
	m.mu.Unlock()
	if s := m.current(); s != nil {
		bl := s.brokerList()
		if len(bl) > 0 {
			r := rotate % len(bl)
			bl = slices.Concat(bl[r:], bl[:r])
		}
		for _, b := range bl {
			if b.State != "fenced" {
				add(b.Addr)
			}
		}
		for _, b := range bl {
			add(b.Addr)
		}
	}
	for _, a := range m.c.cfg.Bootstrap {
		add(a)
	}
	return out
}

// fetch asks candidates for metadata, hedging: each node gets hedge to
// answer before the next one is asked too; the first answer wins. An answer
// older than the cache counts as none (refuseStale): the next node is asked
// at once. Taking it, or just dropping it, kept a fast stale node winning
// every refresh and the client on its old leaders.
func (m *metadata) fetch(ctx context.Context, hedge time.Duration) (*wire.MetadataResponse, string, error) {
	return hedged(ctx, m.candidates(), hedge, func(ctx context.Context, addr string) (*wire.MetadataResponse, error) {
		var r wire.MetadataResponse
		if err := m.c.call(ctx, addr, wire.TypeMetadata, &wire.MetadataRequest{}, &r); err != nil {
			return nil, err
		}
		if r.Err != wire.None {
			return nil, r.Err.Err(r.Message)
		}
		if m.refuseStale(&r) {
			return nil, fmt.Errorf("%w (its offset %d)", errStaleMetadata, r.MetadataOffset)
		}
		return &r, nil
	})
}

// hedged runs fn against addrs, starting the next address when the previous
// one has failed or delay has passed, and returns the first success and the
// address that gave it. The others are cancelled.
func hedged[T any](ctx context.Context, addrs []string, delay time.Duration, fn func(ctx context.Context, addr string) (T, error)) (T, string, error) {
	var zero T
	if len(addrs) == 0 {
		return zero, "", errors.New("client: no node addresses known")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		v    T
		addr string
		err  error
	}
	results := make(chan result, len(addrs))
	next, pending := 0, 0
	launch := func() {
		a := addrs[next]
		next++
		pending++
		go func() {
			v, err := fn(ctx, a)
			results <- result{v, a, err}
		}()
	}
	launch()
	hedge := time.NewTimer(delay)
	defer hedge.Stop()
	var last error
	for {
		select {
		case r := <-results:
			pending--
			if r.err == nil {
				return r.v, r.addr, nil
			}
			last = fmt.Errorf("%s: %w", r.addr, r.err)
			if next < len(addrs) {
				launch()
				hedge.Reset(delay)
			} else if pending == 0 {
				return zero, "", fmt.Errorf("client: no node answered (tried %d): %w", len(addrs), last)
			}
		case <-hedge.C:
			if next < len(addrs) {
				launch()
				hedge.Reset(delay)
			}
		case <-ctx.Done():
			if last != nil {
				return zero, "", fmt.Errorf("client: no node answered in time: %w", last)
			}
			return zero, "", fmt.Errorf("client: no node answered in time (tried %v): %w", addrs[:next], ctx.Err())
		}
	}
}
