package client

import (
	"slices"
	"time"

	"paymentlog/wire"
)

// metadataWatchWait is how long a watch waits at a node for metadata newer
// than the cache before it ends (a stalled producer starts the next one at
// its next leader check).
const metadataWatchWait = time.Second

// metadataWatchGrace is how long past metadataWatchWait a watch waits for
// the answer before it gives the node up (and the next watch goes to the
// next node).
const metadataWatchGrace = 500 * time.Millisecond

// maxMetadataWatches bounds the watches a client runs at once.
const maxMetadataWatches = 3

// watch starts a long-poll Metadata request (wire.MetadataRequest.WaitAbove)
// for news past the cached snapshot, unless a watch already runs at a node
// outside avoid (nodes suspected dead: the leader a stalled request went
// to), which serves this caller too. So a watch that went to a node that
// has since died (a stalled acks=all request avoids only its leader, not
// the follower whose death stalls it) does not hold back the watch of the
// caller that suspects that node. The new watch goes to a candidate node
// outside avoid without a watch, preferably one not in spare either (nodes
// that may die unnoticed while they serve the caller's long polls); among
// those the first, or the next after each watch that waited in vain or got
// no answer at all.
// The node answers the moment it applies a newer metadata offset, such as
// the change that moves a partition's leadership; the answer is stored as a
// refresh's is, which wakes producers and consumers waiting on leaders
// (metadata.changed). Polling refreshes go on meanwhile: a watch only makes
// the news arrive sooner. It never blocks.
func (m *metadata) watch(avoid, spare []string) {
	cur := m.current()
	if cur == nil || m.watchServes(avoid) {
		return
	}
	cands := m.candidates() // takes the lock itself
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.watchServesLocked(avoid) {
		return
	}
	var eligible, preferred []string
	for _, a := range cands {
		if slices.Contains(avoid, a) || m.mu.noWatch[a] || m.mu.watches[a] {
			continue
		}
		eligible = append(eligible, a)
		if !slices.Contains(spare, a) {
			preferred = append(preferred, a)
		}
	}
	if len(preferred) > 0 {
		eligible = preferred
	}
	if len(eligible) == 0 {
		return
	}
	addr := eligible[m.mu.watchTurn%len(eligible)]
	if m.mu.watches == nil {
		m.mu.watches = map[string]bool{}
	}
	m.mu.watches[addr] = true
	m.watchCount.Add(1)
	go m.runWatch(addr, cur.offset)
}

// watchServes reports whether a running watch serves a caller that
// suspects avoid (one runs at a node outside it), or no other may start
// (maxMetadataWatches run).
func (m *metadata) watchServes(avoid []string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.watchServesLocked(avoid)
}

func (m *metadata) watchServesLocked(avoid []string) bool {
	for a := range m.mu.watches {
		if !slices.Contains(avoid, a) {
			return true
		}
	}
	return len(m.mu.watches) >= maxMetadataWatches
}

// watching reports whether any watch runs.
func (m *metadata) watching() bool { return m.watchCount.Load() > 0 }

func (m *metadata) runWatch(addr string, above int64) {
	// A node that has not answered half a second after the wait is
	// likely dead: give up on it and watch the next one.
	ctx, cancel := m.backgroundCtx(metadataWatchWait + metadataWatchGrace)
	defer cancel()
	start := time.Now()
	var r wire.MetadataResponse
	req := &wire.MetadataRequest{WaitAbove: above, MaxWaitMs: int32(metadataWatchWait / time.Millisecond)}
	err := m.c.call(ctx, addr, wire.TypeMetadata, req, &r)
	m.c.log.Debug("metadata watch answered", "addr", addr, "above", above, "offset", r.MetadataOffset,
		"waited", time.Since(start), "err", err)
	m.mu.Lock()
	defer m.mu.Unlock()
	// Ended before the news is stored: a caller it wakes may start the
	// next watch at once.
	delete(m.mu.watches, addr)
	m.watchCount.Add(-1)
	if err != nil || r.Err != wire.None {
		m.mu.watchTurn++
		return
	}
	if r.MetadataOffset <= above {
		// No news. Within half the wait, the node did not wait at all:
		// an older build, which ignores the long poll; watch others.
		// Else it waited in vain (it may be cut off from the
		// controller): the next watch goes to the next node.
		if time.Since(start) < metadataWatchWait/2 {
			if m.mu.noWatch == nil {
				m.mu.noWatch = map[string]bool{}
			}
			m.mu.noWatch[addr] = true
		} else {
			m.mu.watchTurn++
		}
		return
	}
	if cur := m.snap.Load(); cur == nil || r.MetadataOffset > cur.offset {
		m.storeLocked(&r, addr)
	}
}
