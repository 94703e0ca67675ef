package quic

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"sync"

	qgo "github.com/quic-go/quic-go"
	"time"
)

// Peer identifies the remote side of a stream. On the serving side the
// certificate fields are read once per connection, at handshake.
type Peer struct {
	Addr string
	Name string // certificate common name under mutual TLS
	// Authenticated: the endpoint runs mutual TLS, so the peer's certificate
	// was verified against the cluster CA and Role/NodeID can be trusted.
	// False in dev mode, where anyone may claim anything.
	Authenticated bool
	Role          Role  // from the certificate (see Role); RoleNone in dev mode
	NodeID        int32 // with RoleNode: the node id the certificate names

	// leaf is the certificate presented (nil without one), and ep the
	// endpoint that accepted the connection (nil on the dialing side):
	// CheckNodeID reports a refusal to ep's OnRefusedPeer (wrong_node.go).
	leaf *x509.Certificate
	ep   *Endpoint
}

// UnaryHandler answers one request frame with one response. req.Body stays
// valid until the response has been written (so returning Raw(req.Body) is
// fine) and is reused afterwards; Decode copies what it keeps. ctx ends when the
// caller cancels, the connection dies or the endpoint is closed. Returning a
// non-nil error sends an error frame that the caller's Call returns as
// *RemoteError: code CodeHandler, CodeMalformed / CodeFrameTooLarge for an
// error from Decode, or the code of a returned *RemoteError.
type UnaryHandler func(ctx context.Context, peer Peer, req Frame) (respType FrameType, resp any, err error)

// Reply is a unary response that borrows memory: a handler returns it as
// resp when Body (any value a response may be) holds wire.Bytes fields or a Raw that
// must stay unchanged until the response is written, e.g. slices of a
// segment mapping. Done (may be nil) is called exactly once after the write
// ended, successfully or not (also when the handler returned an error).
type Reply struct {
	Body any
	Done func()
}

// SessionHandler owns a long-lived stream; first is the frame that opened it
// (its Body is valid until the first s.Recv). ctx ends when the stream or
// connection dies or Shutdown begins. When the handler returns, the session is
// closed; a non-nil error is first sent to the peer as an error frame.
type SessionHandler func(ctx context.Context, peer Peer, first Frame, s *Session) error

// Endpoint is one node's UDP socket: it serves registered handlers and dials
// out (client-side calls share the same socket, one connection per remote
// address).
//
// Lifecycle: New binds the socket (calls work at once); Handle/HandleSession
// register handlers (before or during Serve); Serve accepts connections until
// Shutdown and returns ErrServerClosed; Shutdown(ctx) ends everything, like
// net/http's Server.Shutdown:
//
//  1. stop accepting connections; streams opened from now on are refused with
//     CodeShuttingDown (callers may retry elsewhere);
//  2. cancel the contexts of session handlers (they are long-lived and must
//     return on their own), and wait until ctx expires for session handlers
//     to return and for in-flight unary calls to finish: a call finishes when
//     its caller has read the whole response (the caller then closes its side
//     of the stream, which the server waits for);
//  3. close every connection, accepted and dialed, with ConnCodeShutdown;
//  4. close the UDP socket.
//
// Shutdown returns ctx.Err() if ctx expired before step 2 completed, else nil.
// Calls made after Shutdown fail with an error matching ErrServerClosed. An
// endpoint that is not serving (client-only) is shut down the same way; Close
// is Shutdown without waiting.
type Endpoint struct {
	cfg     Config
	log     *slog.Logger
	udp     *net.UDPConn
	closed  *closedPorts // ports its datagrams found closed (closedports.go)
	tr      *qgo.Transport
	addr    string
	srvTLS  *tls.Config // given to Listen; under mutual TLS it takes tlsr's state per handshake
	cliTLS  *tls.Config // dev mode or Config.ClientTLS; else see clientTLS
	tlsr    tlsReloader
	srvConf *qgo.Config
	dialCfg *qgo.Config
	pool    *connPool
	// decodeBudget bounds the list elements its frames decode at once.
	decodeBudget *decodeBudget
	// bodyBudget bounds the bytes allocated for frame bodies yet to arrive.
	bodyBudget *bodyBudget

	// mutualTLS: accepted peers present a certificate verified against the
	// cluster CA, so their roles are trusted and cfg.Authorize applies.
	// verifiesServers: dialed peers' certificates are verified likewise.
	mutualTLS       bool
	verifiesServers bool

	// hardCtx is canceled when Shutdown stops waiting; dials derive from it.
	// sessCtx, the parent of session handlers' contexts, is canceled when
	// Shutdown begins. Unary handlers' contexts are their streams'.
	hardCtx    context.Context
	hardCancel context.CancelFunc
	sessCtx    context.Context
	sessCancel context.CancelFunc

	handlers handlerTable
	active   activeSet
	stats    connStats

	mu struct {
		sync.Mutex
		closing bool
		ln      *qgo.Listener
		conns   map[*qgo.Conn]struct{} // accepted connections
	}
	shutdownOnce sync.Once
	shutdownDone chan struct{}
}

// New creates an endpoint and binds its UDP socket; with an empty cfg.Addr it
// can only dial (it binds an ephemeral port on all interfaces).
func New(ctx context.Context, cfg Config) (*Endpoint, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	e := &Endpoint{cfg: cfg, log: cfg.Logger, shutdownDone: make(chan struct{})}
	e.mu.conns = make(map[*qgo.Conn]struct{})

	mat, err := loadTLS(cfg.TLS, e.log)
	if err != nil {
		return nil, err
	}
	e.srvTLS, e.cliTLS = mat.server, mat.client
	if mat.state != nil && cfg.ServerTLS == nil && cfg.ClientTLS == nil {
		// Handshakes take the current state: see tlsreload.go.
		e.tlsr.cur.Store(mat.state)
		srv := mat.server.Clone()
		srv.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
			return e.reportingRefusals(e.tlsr.cur.Load(), hello), nil
		}
		e.srvTLS = srv
	}
	if cfg.ServerTLS != nil {
		e.srvTLS = cfg.ServerTLS
	}
	if cfg.ClientTLS != nil {
		e.cliTLS = cfg.ClientTLS
	}
	e.mutualTLS = e.srvTLS.ClientAuth == tls.RequireAndVerifyClientCert
	e.verifiesServers = !e.clientTLS().InsecureSkipVerify

	listen := cfg.Addr
	if listen == "" {
		listen = ":0"
	}
	e.closed = &closedPorts{}
	udp, pc, _, err := listenUDP(listen, e.closed, e.log)
	if err != nil {
		return nil, err
	}
	e.udp = udp
	e.addr = udp.LocalAddr().String()

	seed := mat.resetSeed
	if len(cfg.ResetSeed) > 0 {
		seed = cfg.ResetSeed
	}
	key, err := resetKey(seed, e.addr, cfg.Addr != "")
	if err != nil {
		udp.Close()
		return nil, err
	}
	srk := qgo.StatelessResetKey(key)
	e.tr = &qgo.Transport{Conn: pc, StatelessResetKey: &srk}
	e.srvConf = quicConfig(cfg, true)
	e.dialCfg = quicConfig(cfg, false)
	e.hardCtx, e.hardCancel = context.WithCancel(context.WithoutCancel(ctx))
	e.sessCtx, e.sessCancel = context.WithCancel(e.hardCtx)
	e.handlers.init()
	e.active.init()
	e.pool = newConnPool(e)
	e.decodeBudget = newDecodeBudget(cfg.MaxListItems)
	e.bodyBudget = newBodyBudget(defaultBodyBudget)
	if st := e.tlsr.cur.Load(); st != nil {
		e.tlsr.mu.Lock()
		e.warnExpiryLocked(st, time.Now())
		e.tlsr.mu.Unlock()
		if cfg.TLSReloadInterval > 0 {
			go e.watchTLS(cfg.TLSReloadInterval)
		}
	}
	return e, nil
}

// clientTLS is the configuration dials start from: the current TLS state's
// (see tlsreload.go), or the fixed one of dev mode or Config.ClientTLS.
func (e *Endpoint) clientTLS() *tls.Config {
	if st := e.tlsr.cur.Load(); st != nil {
		return st.client
	}
	return e.cliTLS
}

// Addr is the bound UDP address.
func (e *Endpoint) Addr() string { return e.addr }

// Handle registers a unary handler for frame type t; HandleSession a session
// handler. Registering a reserved type (0xF0-0xFF) panics; a later
// registration for the same type replaces the earlier one.
func (e *Endpoint) Handle(t FrameType, h UnaryHandler) { e.handlers.setUnary(t, h) }

// HandleSession registers a session handler for frame type t.
func (e *Endpoint) HandleSession(t FrameType, h SessionHandler) { e.handlers.setSession(t, h) }

// Close shuts the endpoint down without waiting for in-flight work.
func (e *Endpoint) Close() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := e.shutdownOnceWith(ctx, false)
	if err == context.Canceled {
		err = nil
	}
	return err
}

// Shutdown stops accepting, lets in-flight unary calls finish until ctx
// expires, then closes every connection with a code and the socket. See
// Endpoint for the full order. Calling it again waits for the first call.
func (e *Endpoint) Shutdown(ctx context.Context) error {
	return e.shutdownOnceWith(ctx, true)
}

func (e *Endpoint) shutdownOnceWith(ctx context.Context, graceful bool) error {
	var err error
	first := false
	e.shutdownOnce.Do(func() {
		first = true
		err = e.shutdown(ctx, graceful)
		close(e.shutdownDone)
	})
	if !first {
		select {
		case <-e.shutdownDone:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return err
}

func (e *Endpoint) shutdown(ctx context.Context, graceful bool) error {
	e.mu.Lock()
	e.mu.closing = true
	ln := e.mu.ln
	e.mu.Unlock()
	if ln != nil {
		ln.Close()
	}
	e.sessCancel()
	var err error
	drained := e.active.drained()
	select {
	case <-drained:
	default:
		select {
		case <-drained:
		case <-ctx.Done():
			err = ctx.Err()
			if graceful {
				e.log.Warn("quic: shutdown deadline passed with handlers running; closing connections",
					"addr", e.addr, "in_flight", e.active.count())
			}
		}
	}
	e.hardCancel()
	e.mu.Lock()
	conns := make([]*qgo.Conn, 0, len(e.mu.conns))
	for c := range e.mu.conns {
		conns = append(conns, c)
	}
	e.mu.Unlock()
	for _, c := range conns {
		c.CloseWithError(ConnCodeShutdown, "endpoint shutting down")
	}
	e.pool.closeAll()
	if cerr := e.tr.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if cerr := e.udp.Close(); cerr != nil && err == nil && !isClosedErr(cerr) {
		err = cerr
	}
	return err
}

func (e *Endpoint) closing() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.mu.closing
}

// handlerTable maps frame types to handlers; registration may race with serving.
type handlerTable struct {
	mu       sync.RWMutex
	unary    map[FrameType]UnaryHandler
	sessions map[FrameType]SessionHandler
	ordered  map[FrameType]bool // unary types registered with HandleOrdered
}

func (t *handlerTable) init() {
	t.unary = make(map[FrameType]UnaryHandler)
	t.sessions = make(map[FrameType]SessionHandler)
	t.ordered = make(map[FrameType]bool)
}

func (t *handlerTable) setUnary(ft FrameType, h UnaryHandler) { t.setUnaryOrdered(ft, h, false) }

func (t *handlerTable) setOrdered(ft FrameType, h UnaryHandler) { t.setUnaryOrdered(ft, h, true) }

func (t *handlerTable) setUnaryOrdered(ft FrameType, h UnaryHandler, ordered bool) {
	if ft.Reserved() {
		panic(fmt.Sprintf("quic: frame type 0x%02x is reserved for the transport", uint8(ft)))
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.sessions, ft)
	delete(t.ordered, ft)
	if ordered {
		t.ordered[ft] = true
	}
	t.unary[ft] = h
}

func (t *handlerTable) setSession(ft FrameType, h SessionHandler) {
	if ft.Reserved() {
		panic(fmt.Sprintf("quic: frame type 0x%02x is reserved for the transport", uint8(ft)))
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.unary, ft)
	delete(t.ordered, ft)
	t.sessions[ft] = h
}

// lookup returns ft's handler and whether it was registered with
// HandleOrdered.
func (t *handlerTable) lookup(ft FrameType) (UnaryHandler, SessionHandler, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.unary[ft], t.sessions[ft], t.ordered[ft]
}

// activeSet counts running handlers so Shutdown can wait for them. Once
// closed it admits no new ones.
type activeSet struct {
	mu struct {
		sync.Mutex
		n      int
		closed bool
		zero   chan struct{} // closed when closed && n == 0
	}
}

func (a *activeSet) init() { a.mu.zero = make(chan struct{}) }

// add admits one handler; false once draining has begun.
func (a *activeSet) add() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mu.closed {
		return false
	}
	a.mu.n++
	return true
}

func (a *activeSet) done() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.mu.n--
	if a.mu.closed && a.mu.n == 0 {
		close(a.mu.zero)
	}
}

// drained stops admissions and returns a channel closed when none run.
func (a *activeSet) drained() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.mu.closed {
		a.mu.closed = true
		if a.mu.n == 0 {
			close(a.mu.zero)
		}
	}
	return a.mu.zero
}

func (a *activeSet) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.mu.n
}
