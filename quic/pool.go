package quic

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	qgo "github.com/quic-go/quic-go"
)

// connPool keeps one dialed connection per remote address, shared by all
// callers. Concurrent callers wait for a single dial; a failed dial is not
// cached (the next call dials again); a connection that dies for any reason
// (peer close, stateless reset, idle timeout) leaves the pool at once, so the
// next call re-dials. When the peer dials us anew (it may have restarted),
// the connection is probed before anyone sends on it (see reconnect.go).
type connPool struct {
	e *Endpoint
	// probeHook, when set (by tests, before use), is called after each
	// liveness probe with its result (see peerConnected).
	probeHook func(addr string, err error)
	// nudgeHook, when set (by tests, before use), is called before each
	// nudging probe (see nudge.go).
	nudgeHook func()
	mu        struct {
		sync.Mutex
		closed bool
		conns  map[string]*poolEntry
	}
}

// poolEntry is one address's connection, or the dial producing it.
type poolEntry struct {
	ready chan struct{} // closed when the dial finished
	conn  *qgo.Conn     // set before ready is closed, if the dial succeeded
	err   error
	// bulk admits one large request body at a time onto the connection
	// (see Endpoint.roundTrip).
	bulk chan struct{}
	// Set with conn, before ready is closed: when the handshake completed,
	// the server's UDP address, and its node id when its certificate was
	// verified and names one (else 0). See connPool.peerConnected.
	dialedAt time.Time
	remote   string
	nodeID   int32
	// probe is non-nil while a liveness probe of conn runs (see
	// connPool.peerConnected); it is closed when the probe ended, after a
	// connection that failed it (stale) was closed and left the pool.
	// Both guarded by connPool.mu.
	probe chan struct{}
	stale bool
	// waiting counts the calls and sessions on conn waiting for a response
	// frame (see nudge.go).
	waiting atomic.Int32
}

func newConnPool(e *Endpoint) *connPool {
	p := &connPool{e: e}
	p.mu.conns = make(map[string]*poolEntry)
	return p
}

// get returns the connection to addr, dialing if there is none. ctx bounds
// the wait, not the shared dial (bounded by the handshake timeout).
func (p *connPool) get(ctx context.Context, addr string) (*qgo.Conn, error) {
	ent, err := p.entry(ctx, addr)
	if err != nil {
		return nil, err
	}
	return ent.conn, nil
}

// entry is get returning the pool entry (connection and write gate). Every
// dial-out goes through it, so it is where the server's identity is checked
// against the node ctx expects (ExpectNode).
func (p *connPool) entry(ctx context.Context, addr string) (*poolEntry, error) {
	for {
		ent, err := p.entryOnce(ctx, addr)
		if err != nil || ent != nil {
			return ent, err
		}
		// The entry's connection failed a liveness probe and left the pool:
		// dial afresh.
	}
}

// entryOnce is one attempt of entry: nil, nil when the entry found failed
// the liveness probe it was waiting for.
func (p *connPool) entryOnce(ctx context.Context, addr string) (*poolEntry, error) {
	p.mu.Lock()
	if p.mu.closed {
		p.mu.Unlock()
		return nil, &OpError{Op: "dial", Addr: addr, Err: ErrServerClosed}
	}
	ent := p.mu.conns[addr]
	if ent == nil {
		ent = &poolEntry{ready: make(chan struct{}), bulk: make(chan struct{}, 1)}
		p.mu.conns[addr] = ent
		go p.dial(addr, ent)
	}
	p.mu.Unlock()
	select {
	case <-ent.ready:
	case <-ctx.Done():
		return nil, &OpError{Op: "dial", Addr: addr, Err: ctx.Err()}
	}
	if ent.err != nil {
		return nil, ent.err
	}
	// A new connection from this peer raised doubt about ours (the peer
	// may have restarted): wait for the probe rather than send into a
	// connection the peer no longer knows, where the request would be lost.
	p.mu.Lock()
	probe, stale := ent.probe, ent.stale
	p.mu.Unlock()
	if probe != nil {
		select {
		case <-probe:
		case <-ctx.Done():
			return nil, &OpError{Op: "dial", Addr: addr, Err: ctx.Err()}
		}
		p.mu.Lock()
		stale = ent.stale
		p.mu.Unlock()
	}
	if stale {
		p.remove(addr, ent)
		return nil, nil
	}
	if err := p.e.checkExpected(ctx, addr, ent); err != nil {
		return nil, err
	}
	return ent, nil
}

func (p *connPool) dial(addr string, ent *poolEntry) {
	conn, err := p.e.dial(addr)
	ent.conn, ent.err = conn, err
	if err != nil {
		p.e.reloadOnRefusal(err)
		p.remove(addr, ent)
		close(ent.ready)
		return
	}
	p.mu.Lock()
	closed := p.mu.closed
	p.mu.Unlock()
	if closed {
		conn.CloseWithError(ConnCodeShutdown, "endpoint shutting down")
		ent.conn, ent.err = nil, &OpError{Op: "dial", Addr: addr, Err: ErrServerClosed}
		close(ent.ready)
		return
	}
	ent.dialedAt = time.Now()
	ent.remote = conn.RemoteAddr().String()
	if p.e.verifiesServers {
		if peer := peerOf(addr, conn.ConnectionState().TLS, true); peer.Role == RoleNode {
			ent.nodeID = peer.NodeID
		}
	}
	p.e.stats.watch(conn)
	close(ent.ready)
	go p.nudge(ent)
	go func() {
		<-conn.Context().Done()
		p.e.reloadOnRefusal(context.Cause(conn.Context()))
		p.remove(addr, ent)
		p.e.log.Debug("quic: connection closed", "peer", addr, "err", describe(context.Cause(conn.Context())))
	}()
}

// drop removes conn's entry if it is still the current one for addr. An
// entry still dialing holds a newer connection (and its dial writes conn
// without the lock): it stays.
func (p *connPool) drop(addr string, conn *qgo.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ent := p.mu.conns[addr]
	if ent == nil {
		return
	}
	select {
	case <-ent.ready:
	default:
		return
	}
	if ent.conn == conn {
		delete(p.mu.conns, addr)
	}
}

func (p *connPool) remove(addr string, ent *poolEntry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.conns[addr] == ent {
		delete(p.mu.conns, addr)
	}
}

// closeAll closes every pooled connection and refuses new ones.
func (p *connPool) closeAll() {
	p.mu.Lock()
	p.mu.closed = true
	ents := make([]*poolEntry, 0, len(p.mu.conns))
	for _, ent := range p.mu.conns {
		ents = append(ents, ent)
	}
	p.mu.conns = map[string]*poolEntry{}
	p.mu.Unlock()
	for _, ent := range ents {
		<-ent.ready // dials are bounded by the handshake timeout and hardCtx
		if ent.conn != nil {
			ent.conn.CloseWithError(ConnCodeShutdown, "endpoint shutting down")
		}
	}
}

// dialedConns returns the pool's connections.
func (p *connPool) dialedConns() []*qgo.Conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*qgo.Conn
	for _, ent := range p.mu.conns {
		select {
		case <-ent.ready:
			if ent.conn != nil {
				out = append(out, ent.conn)
			}
		default: // still dialing: its handshake verifies against the new state
		}
	}
	return out
}

// dial opens a connection to addr over the endpoint's socket.
func (e *Endpoint) dial(addr string) (*qgo.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, &OpError{Op: "dial", Addr: addr, Err: fmt.Errorf("bad address: %w", err)}
	}
	raddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, &OpError{Op: "dial", Addr: addr, Err: err}
	}
	st := e.tlsr.cur.Load() // clientTLS's, once: the reporting copy checks against its revoked list
	tlsConf := e.cliTLS
	if st != nil {
		tlsConf = st.client
	}
	tlsConf = tlsConf.Clone()
	if tlsConf.ServerName == "" {
		tlsConf.ServerName = host
	}
	tlsConf = e.reportingServerRefusals(st, tlsConf, addr) // refused_server.go
	// quic-go gives up after HandshakeIdleTimeout of silence; the context is a
	// backstop for a peer that answers but never completes the handshake.
	ctx, cancel := context.WithTimeout(e.hardCtx, 3*e.cfg.HandshakeTimeout)
	defer cancel()
	ctx, refused := context.WithCancelCause(ctx)
	defer refused(nil)
	stop := e.failOnClosedPort(refused, raddr.AddrPort(), time.Now()) // dialclosed.go
	conn, err := e.tr.Dial(ctx, raddr, tlsConf, e.dialCfg)
	stop()
	if err != nil {
		switch {
		case e.hardCtx.Err() != nil:
			err = ErrServerClosed
		case errors.Is(context.Cause(ctx), ErrPortClosed):
			err = ErrPortClosed
			e.stats.refused.Add(1)
		}
		return nil, &OpError{Op: "dial", Addr: addr, Err: err}
	}
	return conn, nil
}
