package raftnode

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"time"
)

// network is how raft messages leave and reach this node: quicNetwork in
// production, an in-memory network in tests.
type network interface {
	// Dial returns a stream to addr; it may connect lazily on the first Send.
	Dial(ctx context.Context, addr string) (outStream, error)
	// Listen registers h for inbound frames. h returns an error to reject a
	// frame (the stream is then closed). done, if not nil, must be called once
	// the frame's messages have been handled.
	Listen(h inboundHandler)
}

type inboundHandler func(ctx context.Context, f *raftFrame, done func()) error

// outStream is one ordered stream of frames to a peer.
type outStream interface {
	Send(ctx context.Context, f *raftFrame) error
	Close() error
}

// Transport tuning.
const (
	maxBatchMsgs   = 256
	maxBatchBytes  = 1 << 20
	sendTimeout    = 5 * time.Second
	dialTimeout    = 2 * time.Second
	redialBackoff  = 100 * time.Millisecond
	reportChanSize = 256
)

// outMsg is one marshalled raft message waiting for its peer goroutine.
type outMsg struct {
	data []byte
	snap bool // MsgSnap: report the outcome with ReportSnapshot
}

type reportKind int

const (
	reportUnreachable reportKind = iota
	reportSnapOK
	reportSnapFailed
)

// peerReport tells the Ready loop what became of messages to a peer.
type peerReport struct {
	id   uint64
	kind reportKind
}

// peers keeps one goroutine and bounded queue per remote node. Messages to a
// peer are batched into frames and sent in order on one stream; on failure
// the stream is dropped (and redialled for the next batch), the peer is
// reported unreachable, and snapshots in the batch are reported failed.
//
// Lifecycle: newPeers, send/setAddr from any goroutine, close once.
type peers struct {
	self   uint64
	net    network
	lg     *slog.Logger
	qlen   int
	report func(peerReport) // blocks until accepted or the node stops
	hooks  *testHooks
	// backoff is how long a peer whose dial or send failed waits before
	// dialling again; messages for it are dropped meanwhile.
	backoff time.Duration
	ctx     context.Context // canceled by close
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu struct {
		sync.Mutex
		addrs  map[uint64]string
		peers  map[uint64]*peer
		closed bool
	}
}

func newPeers(self uint64, net network, qlen int, report func(peerReport), hooks *testHooks, lg *slog.Logger) *peers {
	ps := &peers{self: self, net: net, lg: lg, qlen: qlen, report: report, hooks: hooks, backoff: redialBackoff}
	if hooks != nil {
		ps.backoff = hooks.redialBackoff
	}
	ps.ctx, ps.cancel = context.WithCancel(context.Background())
	ps.mu.addrs = map[uint64]string{}
	ps.mu.peers = map[uint64]*peer{}
	return ps
}

// setAddr records where id lives; an existing stream to an old address is
// replaced before the next batch.
func (ps *peers) setAddr(id uint64, addr string) {
	if id == ps.self || addr == "" {
		return
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.mu.addrs[id] = addr
}

// remove forgets id and stops its goroutine.
func (ps *peers) remove(id uint64) {
	ps.mu.Lock()
	p := ps.mu.peers[id]
	delete(ps.mu.peers, id)
	delete(ps.mu.addrs, id)
	ps.mu.Unlock()
	if p != nil {
		close(p.stop)
	}
}

func (ps *peers) addr(id uint64) string {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.mu.addrs[id]
}

// addrs returns a copy of every known address.
func (ps *peers) addrs() map[uint64]string {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	out := make(map[uint64]string, len(ps.mu.addrs))
	for id, a := range ps.mu.addrs {
		out[id] = a
	}
	return out
}

// send queues m for id without blocking. It returns false if m was dropped
// (full queue, unknown address, closed): the caller, the Ready loop, then
// reports the peer unreachable (and the snapshot failed) itself.
func (ps *peers) send(id uint64, m outMsg) bool {
	ps.mu.Lock()
	p, ok := ps.mu.peers[id]
	if !ok && !ps.mu.closed && ps.mu.addrs[id] != "" {
		p = &peer{id: id, ps: ps, q: make(chan outMsg, ps.qlen), stop: make(chan struct{})}
		ps.mu.peers[id] = p
		ps.wg.Add(1)
		go p.run()
	}
	ps.mu.Unlock()
	if p == nil {
		return false
	}
	ps.hooks.add(1)
	select {
	case p.q <- m:
		return true
	default:
		ps.hooks.add(-1)
		return false
	}
}

// dropped reports msgs as lost.
func (ps *peers) dropped(id uint64, msgs []outMsg) {
	ps.report(peerReport{id: id, kind: reportUnreachable})
	for _, m := range msgs {
		if m.snap {
			ps.report(peerReport{id: id, kind: reportSnapFailed})
		}
	}
	ps.hooks.add(-len(msgs))
}

// close stops every peer goroutine and waits for them.
func (ps *peers) close() {
	ps.mu.Lock()
	ps.mu.closed = true
	for id, p := range ps.mu.peers {
		close(p.stop)
		delete(ps.mu.peers, id)
	}
	ps.mu.Unlock()
	ps.cancel()
	ps.wg.Wait()
}

// peer is the sending side towards one remote node.
type peer struct {
	id   uint64
	ps   *peers
	q    chan outMsg
	stop chan struct{}

	// Owned by run.
	stream     outStream
	streamAddr string
	retryAt    time.Time
}

func (p *peer) run() {
	defer p.ps.wg.Done()
	defer p.closeStream()
	batch := make([]outMsg, 0, maxBatchMsgs)
	for {
		select {
		case <-p.stop:
			p.drain()
			return
		case m := <-p.q:
			batch = append(batch[:0], m)
		}
		size := len(batch[0].data)
	fill:
		for len(batch) < maxBatchMsgs && size < maxBatchBytes {
			select {
			case m := <-p.q:
				batch = append(batch, m)
				size += len(m.data)
			default:
				break fill
			}
		}
		p.sendBatch(batch)
	}
}

// drain drops whatever is still queued (the node is stopping).
func (p *peer) drain() {
	for {
		select {
		case m := <-p.q:
			p.ps.hooks.add(-1)
			_ = m
		default:
			return
		}
	}
}

func (p *peer) sendBatch(batch []outMsg) {
	ps := p.ps
	addr := ps.addr(p.id)
	if p.stream != nil && addr != p.streamAddr {
		p.closeStream()
	}
	if p.stream == nil {
		if addr == "" || time.Now().Before(p.retryAt) {
			ps.dropped(p.id, batch)
			return
		}
		ctx, cancel := context.WithTimeout(ps.ctx, dialTimeout)
		s, err := ps.net.Dial(ctx, addr)
		cancel()
		if err != nil {
			ps.lg.Debug("raftnode: dial failed", "peer", p.id, "addr", addr, "err", err)
			p.retryAt = time.Now().Add(ps.backoff)
			ps.dropped(p.id, batch)
			return
		}
		p.stream, p.streamAddr = s, addr
	}
	f := &raftFrame{From: ps.self, To: p.id, Msgs: make([][]byte, len(batch))}
	for i, m := range batch {
		f.Msgs[i] = m.data
	}
	ctx, cancel := context.WithTimeout(ps.ctx, sendTimeout)
	err := p.stream.Send(ctx, f)
	cancel()
	if err != nil {
		ps.lg.Debug("raftnode: send failed", "peer", p.id, "addr", addr, "err", err)
		p.closeStream()
		p.retryAt = time.Now().Add(ps.backoff)
		ps.dropped(p.id, batch)
		return
	}
	for _, m := range batch {
		if m.snap {
			ps.report(peerReport{id: p.id, kind: reportSnapOK})
		}
	}
	ps.hooks.add(-len(batch))
}

func (p *peer) closeStream() {
	if p.stream != nil {
		_ = p.stream.Close()
		p.stream, p.streamAddr = nil, ""
	}
}

func sortedIDs[V any](m map[uint64]V) []uint64 {
	ids := make([]uint64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}
