package client

import (
	"slices"
	"sync"
	"testing"
	"time"

	"paymentlog/client/clienttest"
	"paymentlog/quic"
	"paymentlog/wire"
)

// waitWatchDone waits until no metadata watch runs.
func waitWatchDone(tb testing.TB, m *metadata) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for m.watching() {
		if time.Now().After(deadline) {
			tb.Fatal("metadata watch still running")
		}
		time.Sleep(time.Millisecond)
	}
}

// A watch stores news as a refresh does (waking those waiting on
// changed), and avoids the node it is told to avoid.
func TestMetadataWatchStoresNews(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("a", 1)
	c := refreshedFakeClient(t, fc)
	before := c.meta.current().offset
	fc.CreateTopic("b", 1) // news: a higher metadata offset
	changed := c.meta.changed()
	avoid := fc.Addrs()[0]
	c.meta.watch([]string{avoid}, nil)
	waitWatchDone(t, c.meta)
	select {
	case <-changed:
	default:
		t.Fatal("the watch's news did not wake those waiting on changed")
	}
	s := c.meta.current()
	if _, ok := s.topics["b"]; !ok || s.offset <= before || s.from == avoid {
		t.Fatalf("snapshot offset %d (was %d) from %s, topics %v; want b, from a node other than %s", s.offset, before, s.from, s.topics, avoid)
	}
}

// A node that answers a watch at once without news ignores the long poll
// (an older build): it is not watched again, the others are.
func TestMetadataWatchSkipsNodesThatDoNotWait(t *testing.T) {
	fc := clienttest.New(3)
	fc.IgnoreMetadataWait.Store(true)
	fc.CreateTopic("a", 1)
	c := refreshedFakeClient(t, fc)
	for i := 0; i < 3; i++ {
		c.meta.watch(nil, nil)
		waitWatchDone(t, c.meta)
	}
	for _, a := range fc.Addrs() {
		if !c.meta.watchRefused(a) {
			t.Errorf("node %s answered at once without news and is still watched", a)
		}
	}
	c.meta.watch(nil, nil) // no node left: nothing starts
	if c.meta.watching() {
		t.Fatal("a watch started with every node refusing to wait")
	}
}

// A watch at a node that never answers (dead) gives it up soon after the
// wait, and the next watch goes to another node.
func TestMetadataWatchGivesUpASilentNode(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("a", 1)
	c := refreshedFakeClient(t, fc)
	sw := hangFirstWatchedNode(fc)
	c.meta.watch(nil, nil)
	waitWatchDone(t, c.meta) // about metadataWatchWait + metadataWatchGrace
	c.meta.watch(nil, nil)
	asked := sw.waitAsked(t, 2)
	if asked[1] == asked[0] {
		t.Fatalf("the second watch went to %s again, which never answered the first", asked[1])
	}
}

// A watch stuck at a node that died (it went there before anything was
// suspected) does not hold back the watch of a caller that suspects that
// node: that caller's watch goes elsewhere and brings the news.
func TestMetadataWatchBesideOneAtASuspectedNode(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("a", 1)
	c := refreshedFakeClient(t, fc)
	sw := hangFirstWatchedNode(fc)
	c.meta.watch(nil, nil) // goes to the node that will hang
	stuck := sw.waitAsked(t, 1)[0]
	changed := c.meta.changed()
	c.meta.watch([]string{stuck}, nil) // a caller whose request stalled at that node
	fc.CreateTopic("b", 1)
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no news: the second watch did not start beside the stuck one")
	}
	if s := c.meta.current(); s.from == stuck {
		t.Fatalf("news from the stuck node %s", stuck)
	}
	waitWatchDone(t, c.meta)
}

// silentWatches makes the first node asked for a watch never answer one,
// and records every node asked for a watch, in order.
type silentWatches struct {
	mu    sync.Mutex
	asked []string
}

func hangFirstWatchedNode(fc *clienttest.Cluster) *silentWatches {
	sw := &silentWatches{}
	fc.SetIntercept(func(addr string, ft quic.FrameType, req any) clienttest.Action {
		if r, ok := req.(*wire.MetadataRequest); ft == wire.TypeMetadata && ok && r.MaxWaitMs > 0 {
			sw.mu.Lock()
			defer sw.mu.Unlock()
			sw.asked = append(sw.asked, addr)
			if addr == sw.asked[0] {
				return clienttest.Action{Kind: clienttest.Hang}
			}
		}
		return clienttest.Action{}
	})
	return sw
}

// waitAsked waits until n watches were asked for and returns the nodes.
func (sw *silentWatches) waitAsked(tb testing.TB, n int) []string {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		sw.mu.Lock()
		asked := slices.Clone(sw.asked)
		sw.mu.Unlock()
		if len(asked) >= n {
			return asked
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%d watches asked for, want %d", len(asked), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// watchRefused reports whether addr answered a watch without waiting.
func (m *metadata) watchRefused(addr string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.noWatch[addr]
}
