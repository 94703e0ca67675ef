package audit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Forwarding (PCI DSS 10.3.3: audit logs promptly backed up to a central
// log server that is difficult to modify): every line, as written to the
// file, is also sent to a syslog collector, so that lines edited or cut
// off the node's own file (which the hash chain cannot show at its end)
// survive elsewhere, with their chain.
//
// Messages are RFC 5424 (facility authpriv; severity warning for denied
// lines, info for the rest; APP-NAME paymentlog, MSGID audit, the line as
// MSG), over TCP with octet-counting framing (RFC 6587), over TLS with the
// same framing (RFC 5425; forward_tls.go), or one per UDP datagram. They are sent from a queue by one goroutine, so a slow or dead
// collector never holds a request back: when the queue is full, lines are
// dropped and counted (ForwardDropped). The file stays the record; a line in
// flight when a TCP connection breaks may reach the collector twice or not
// at all (syslog over TCP has no acknowledgements).

// forwardQueue is how many lines wait for the collector before new ones are
// dropped.
const forwardQueue = 10000

// Syslog priorities: facility authpriv (10) × 8 + severity.
const (
	priInfo    = 10*8 + 6
	priWarning = 10*8 + 4
)

// maxUDPMessage is the largest datagram sent; a longer line is dropped.
const maxUDPMessage = 65000

// Forward timing.
const (
	forwardDialTimeout  = 2 * time.Second
	forwardWriteTimeout = 2 * time.Second
	forwardRetry        = time.Second
	// forwardDrain bounds how long Close waits for queued lines.
	forwardDrain = 2 * time.Second
)

// ParseForwardAddr checks a collector address: tcp://host:port,
// tls://host:port or udp://host:port. It returns the network ("tcp", "tls"
// or "udp") and host:port.
func ParseForwardAddr(s string) (network, addr string, err error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "tcp" && u.Scheme != "tls" && u.Scheme != "udp") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil {
		return "", "", fmt.Errorf("audit syslog %q: want tcp://HOST:PORT, tls://HOST:PORT or udp://HOST:PORT", s)
	}
	if _, port, err := net.SplitHostPort(u.Host); err != nil || port == "" {
		return "", "", fmt.Errorf("audit syslog %q: want tcp://HOST:PORT, tls://HOST:PORT or udp://HOST:PORT (no port)", s)
	}
	return u.Scheme, u.Host, nil
}

// forwarder sends lines to a syslog collector.
type forwarder struct {
	network, addr string
	tls           ForwardTLS // network "tls"
	host          string
	pid           int
	log           *slog.Logger
	q             chan []byte

	sent, dropped atomic.Uint64
	// refused counts failed TLS connections, by ForwardRefusals' index.
	refused [len(ForwardRefusals)]atomic.Uint64

	closeOnce sync.Once
	stop      context.CancelFunc // ends retries once Close has waited forwardDrain
	done      chan struct{}
}

// newForwarder starts forwarding to addr (ParseForwardAddr's form), with
// t for tls:// (forward_tls.go).
func newForwarder(addr string, t ForwardTLS, queue int, logger *slog.Logger) (*forwarder, error) {
	network, hostport, err := ParseForwardAddr(addr)
	if err != nil {
		return nil, err
	}
	if err := t.checkFor(network, addr); err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	if host == "" {
		host = "-"
	}
	ctx, stop := context.WithCancel(context.Background())
	f := &forwarder{network: network, addr: hostport, tls: t, host: host, pid: os.Getpid(), log: logger,
		q: make(chan []byte, queue), stop: stop, done: make(chan struct{})}
	go f.run(ctx)
	return f, nil
}

// enqueue queues one line (its bytes are copied into the message), or
// drops it when the queue is full. event picks the severity.
func (f *forwarder) enqueue(line []byte, event string, at time.Time) {
	pri := priInfo
	if event == EventDenied {
		pri = priWarning
	}
	msg := fmt.Appendf(nil, "<%d>1 %s %s paymentlog %d audit - %s", pri, at.UTC().Format(time.RFC3339Nano), f.host, f.pid, line)
	if f.network == "udp" && len(msg) > maxUDPMessage {
		f.dropped.Add(1)
		return
	}
	select {
	case f.q <- msg:
	default:
		f.dropped.Add(1)
	}
}

// run sends queued messages until the queue is closed and drained (or
// stop is called), reconnecting as needed.
func (f *forwarder) run(ctx context.Context) {
	defer close(f.done)
	var conn net.Conn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	var out outage
	for msg := range f.q {
		for {
			if conn == nil {
				var err error
				if conn, err = f.dial(ctx); err != nil {
					conn = nil
					f.failed(&out, err)
					if !sleepCtx(ctx, forwardRetry) {
						f.dropped.Add(uint64(1 + len(f.q)))
						return
					}
					continue
				}
				if out.down {
					f.log.Info("audit syslog collector reachable again", "addr", f.network+"://"+f.addr)
				}
				out = outage{}
			}
			frame := msg
			if f.network != "udp" {
				frame = append(strconv.AppendInt(nil, int64(len(msg)), 10), ' ')
				frame = append(frame, msg...)
			}
			conn.SetWriteDeadline(time.Now().Add(forwardWriteTimeout)) //nolint:errcheck // a failed write says so
			if _, err := conn.Write(frame); err != nil {
				conn.Close()
				conn = nil
				if ctx.Err() != nil {
					f.dropped.Add(uint64(1 + len(f.q)))
					return
				}
				continue
			}
			f.sent.Add(1)
			break
		}
	}
}

// dial connects to the collector.
func (f *forwarder) dial(ctx context.Context) (net.Conn, error) {
	if f.network == "tls" {
		return dialTLS(ctx, f.tls, f.addr)
	}
	d := net.Dialer{Timeout: forwardDialTimeout}
	return d.DialContext(ctx, f.network, f.addr)
}

// outage is what was logged of a collector not reached since the last
// connection: each kind of failure is logged once.
type outage struct {
	down    bool            // unreachable, or refused: "reachable again" is logged
	refused map[string]bool // the refusals logged (ForwardRefusals)
}

// failed counts and logs (once per outage and reason) a failed connection.
func (f *forwarder) failed(out *outage, err error) {
	addr := f.network + "://" + f.addr
	var ref *forwardRefusedError
	if !errors.As(err, &ref) {
		if !out.down {
			f.log.Warn("audit syslog collector unreachable; lines wait in a queue, and are dropped (counted) once it is full",
				"addr", addr, "err", err)
		}
		out.down = true
		return
	}
	// Logged before counted: whoever sees the count (a scrape, a test)
	// also finds the error line.
	defer f.refused[slices.Index(ForwardRefusals[:], ref.reason)].Add(1)
	if out.refused[ref.reason] {
		return
	}
	if out.refused == nil {
		out.refused = map[string]bool{}
	}
	out.down, out.refused[ref.reason] = true, true
	f.log.Error("audit syslog collector's TLS connection refused; retrying every second, lines wait in a queue and are dropped (counted) once it is full",
		"addr", addr, "reason", ref.reason, "err", ref.err)
}

// close stops accepting lines and waits up to forwardDrain for the queued
// ones to be sent.
func (f *forwarder) close() {
	f.closeOnce.Do(func() {
		close(f.q)
		select {
		case <-f.done:
		case <-time.After(forwardDrain):
			f.stop() // ends the retries: run counts what is left as dropped
			<-f.done
		}
		f.stop() // releases the context either way
	})
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
