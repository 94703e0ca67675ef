package quic

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// onewayProxy forwards UDP datagrams between one client and a server,
// records when each went by, and can drop everything in one direction: a
// link that still carries packets one way but not the other.
type onewayProxy struct {
	pc net.PacketConn
	up *net.UDPConn // to the server
	mu struct {
		sync.Mutex
		client net.Addr
		drop   [2]bool        // by direction: 0 client → server, 1 server → client
		seen   [2][]time.Time // every packet, dropped or not
	}
}

const (
	dirUp   = 0
	dirDown = 1
)

func newOnewayProxy(tb testing.TB, server string) *onewayProxy {
	tb.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	saddr, err := net.ResolveUDPAddr("udp", server)
	if err != nil {
		tb.Fatal(err)
	}
	up, err := net.DialUDP("udp", nil, saddr)
	if err != nil {
		tb.Fatal(err)
	}
	p := &onewayProxy{pc: pc, up: up}
	tb.Cleanup(func() { pc.Close(); up.Close() })
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if p.pass(dirUp, from) {
				up.Write(buf[:n])
			}
		}
	}()
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := up.Read(buf)
			if err != nil {
				return
			}
			if p.pass(dirDown, nil) {
				p.mu.Lock()
				to := p.mu.client
				p.mu.Unlock()
				pc.WriteTo(buf[:n], to)
			}
		}
	}()
	return p
}

// pass records a packet going dir and reports whether it gets through.
func (p *onewayProxy) pass(dir int, from net.Addr) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if from != nil {
		p.mu.client = from
	}
	p.mu.seen[dir] = append(p.mu.seen[dir], time.Now())
	return !p.mu.drop[dir] && p.mu.client != nil
}

func (p *onewayProxy) Addr() string { return p.pc.LocalAddr().String() }

func (p *onewayProxy) setDrop(dir int, drop bool) {
	p.mu.Lock()
	p.mu.drop[dir] = drop
	p.mu.Unlock()
}

// packetsBetween counts the packets that went dir between from and to,
// dropped or not.
func (p *onewayProxy) packetsBetween(dir int, from, to time.Time) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, at := range p.mu.seen[dir] {
		if !at.Before(from) && !at.After(to) {
			n++
		}
	}
	return n
}

// longestSilence is the longest time between from and to in which no
// packet went dir.
func (p *onewayProxy) longestSilence(dir int, from, to time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	var longest time.Duration
	last := from
	for _, at := range p.mu.seen[dir] {
		if at.Before(from) || at.After(to) {
			continue
		}
		longest = max(longest, at.Sub(last))
		last = at
	}
	return max(longest, to.Sub(last))
}

// A call stalled by a one-way link fault: while the fault lasts, the side
// whose packets are lost keeps sending a packet every nudgeEvery (the
// nudging probes, answered by the peer), so that the first one after the
// link heals restarts the connection; without them quic-go sends only its
// probe-timeout retransmissions, whose intervals double (up to 1 s apart
// within the fault here), and the call was answered up to the last
// interval after the heal (measured with nudging disabled: 10–12 packets
// in the fault's last 2.8 s, answered 1.6 s after the heal; with it,
// 41–55 packets, answered within 0.1 s).
func TestOneWayFaultNudgesTheStalledConnection(t *testing.T) {
	const hold = 3 * time.Second
	for _, tc := range []struct {
		name string
		dir  int
	}{{"server cannot receive", dirUp}, {"server cannot send", dirDown}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := mustServe(t, Config{})
			px := newOnewayProxy(t, srv.Addr())
			cli := mustClient(t, Config{})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			for range 20 { // some RTT samples
				if err := cli.Call(ctx, px.Addr(), typeEcho, echoMsg{N: 1}, nil); err != nil {
					t.Fatal(err)
				}
			}
			px.setDrop(tc.dir, true)
			start := time.Now()
			answered := make(chan error, 1)
			var answeredAt time.Time
			go func() {
				err := cli.Call(ctx, px.Addr(), typeEcho, echoMsg{N: 2}, nil)
				answeredAt = time.Now()
				answered <- err
			}()
			time.Sleep(hold) // the fault's length; nothing is waited for
			px.setDrop(tc.dir, false)
			healed := time.Now()
			if err := <-answered; err != nil {
				t.Fatalf("the stalled call failed after the link healed: %v", err)
			}
			// From the first probe timeout on (200 ms in) to the heal, the
			// nudges send a packet or two every nudgeEvery: measured, 15–19
			// a second either way, and 3–6 a second without them (quic-go's
			// probes, at most 1 s apart). Counting them, rather than timing
			// the longest silence, lets a test machine stall the sender for
			// a second without failing the test.
			from := start.Add(200 * time.Millisecond)
			got := px.packetsBetween(tc.dir, from, healed)
			want := int(healed.Sub(from) * 6 / (10 * nudgeEvery))
			t.Logf("answered %v after the heal; %d packets went %s in the fault's %v (want ≥ %d), longest silence %v",
				answeredAt.Sub(healed).Round(time.Millisecond), got, []string{"up", "down"}[tc.dir],
				healed.Sub(from).Round(time.Millisecond), want, px.longestSilence(tc.dir, from, healed).Round(time.Millisecond))
			if got < want {
				t.Fatalf("only %d packets went %s in %v of the fault (want ≥ %d): the stalled connection was not nudged",
					got, []string{"up", "down"}[tc.dir], healed.Sub(from).Round(time.Millisecond), want)
			}
			// Close both ends while the proxy still forwards, so that the
			// server's graceful shutdown sees the client's close at once.
			cli.Close()
			sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer scancel()
			srv.Shutdown(sctx)
		})
	}
}

// An idle connection, and one whose calls are answered, is not probed.
func TestNudgeLeavesIdleConnectionsAlone(t *testing.T) {
	srv := mustServe(t, Config{})
	cli := mustClient(t, Config{})
	var nudges atomic.Int32
	cli.pool.nudgeHook = func() { nudges.Add(1) }
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	deadline := time.Now().Add(5 * nudgeEvery)
	for time.Now().Before(deadline) {
		if err := cli.Call(ctx, srv.Addr(), typeEcho, echoMsg{N: 1}, nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(nudgeEvery / 10) // a steady trickle of answered calls
	}
	time.Sleep(3 * nudgeEvery) // then idle: three nudge ticks with nothing awaited
	if n := nudges.Load(); n != 0 {
		t.Fatalf("%d probes on a connection whose calls were all answered", n)
	}
}
