package quic

// Benchmarks, each with its raw baseline measured in the same run and
// reported as a ratio (b.ReportMetric):
//
//   BenchmarkBulk/frame=SIZE   framed session frames (Send / Recv+Decode) vs a
//                              raw quic-go stream on the same connection, and
//                              TCP loopback for context
//   BenchmarkUnaryConcurrent   64 goroutines of 1 KiB Calls vs raw quic-go echo
//   BenchmarkUnarySmall        one goroutine, 16-byte Calls vs raw quic-go echo
//
// Run: go test -run '^$' -bench . -count 5 ./quic/

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	qgo "github.com/quic-go/quic-go"
)

const (
	typeBenchSink FrameType = 60 // session: frames until an end frame, then an ack
	typeRawSink   FrameType = 61 // session: first frame gives the round size; then raw bytes, 1-byte ack per round
	typeBenchEcho FrameType = 62 // unary echo of a Raw body
)

type bulkMsg struct {
	End  bool   `msgpack:"end"`
	Data []byte `msgpack:"data"`
}

func registerBenchHandlers(e *Endpoint) {
	e.HandleSession(typeBenchSink, func(ctx context.Context, p Peer, first Frame, s *Session) error {
		var m bulkMsg
		var n int64
		for {
			f, err := s.Recv(ctx)
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			if err := f.Decode(&m); err != nil {
				return err
			}
			n++
			if m.End {
				if err := s.Send(ctx, typeBenchSink, n); err != nil {
					return err
				}
			}
		}
	})
	e.HandleSession(typeRawSink, func(ctx context.Context, p Peer, first Frame, s *Session) error {
		var round int64
		if err := first.Decode(&round); err != nil {
			return err
		}
		buf := make([]byte, 1<<20)
		for {
			for left := round; left > 0; {
				n, err := s.str.Read(buf[:min(int64(len(buf)), left)])
				left -= int64(n)
				if err != nil {
					if err == io.EOF {
						return nil
					}
					return err
				}
			}
			if _, err := s.str.Write([]byte{1}); err != nil {
				return err
			}
		}
	})
	e.Handle(typeBenchEcho, func(ctx context.Context, p Peer, req Frame) (FrameType, any, error) {
		return typeBenchEcho, Raw(req.Body), nil
	})
}

// benchPair is a serving endpoint and a client endpoint on loopback.
func benchPair(b *testing.B) (srv, cli *Endpoint) {
	b.Helper()
	srv = mustServe(b, Config{})
	registerBenchHandlers(srv)
	cli = mustClient(b, Config{})
	return srv, cli
}

// roundFrames is how many frames one timed round moves (about 8 MiB).
func roundFrames(size int) int { return max(1, (8<<20)/size) }

// medianRatio is the median over paired rounds of a[i]/b[i]: rounds run back
// to back share the machine's load, so their ratio is robust to noise.
func medianRatio(a, b []float64) float64 {
	r := make([]float64, len(a))
	for i := range a {
		r[i] = a[i] / b[i]
	}
	slices.Sort(r)
	if len(r) == 0 {
		return 0
	}
	return r[len(r)/2]
}

func BenchmarkBulk(b *testing.B) {
	for _, size := range []int{64 << 10, 256 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("frame=%dKiB", size>>10), func(b *testing.B) { benchBulk(b, size) })
	}
}

func benchBulk(b *testing.B, size int) {
	srv, cli := benchPair(b)
	ctx := context.Background()
	payload := make([]byte, size)
	for i := range payload {
		payload[i] = byte(i)
	}
	per := roundFrames(size)
	framed, err := cli.OpenSession(ctx, srv.Addr(), typeBenchSink, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer framed.Close()
	raw, err := cli.OpenSession(ctx, srv.Addr(), typeRawSink, int64(per*size))
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	tcp := startTCPSink(b, int64(per*size))
	defer tcp.Close()

	framedRound := func(n int) {
		msg := bulkMsg{Data: payload}
		for range n {
			if err := framed.Send(ctx, 1, &msg); err != nil {
				b.Fatal(err)
			}
		}
		if err := framed.Send(ctx, 1, &bulkMsg{End: true}); err != nil {
			b.Fatal(err)
		}
		if _, err := framed.Recv(ctx); err != nil {
			b.Fatal(err)
		}
	}
	rawRound := func(w io.Writer, r io.Reader) {
		for range per {
			if _, err := w.Write(payload); err != nil {
				b.Fatal(err)
			}
		}
		var ack [1]byte
		if _, err := io.ReadFull(r, ack[:]); err != nil {
			b.Fatal(err)
		}
	}
	// Warm up congestion and flow-control windows on all three paths.
	framedRound(per)
	rawRound(raw.str, raw.str)
	rawRound(tcp, tcp)

	var tFramed, tRaw, tTCP time.Duration
	var rateF, rateR []float64 // per round, bytes per second
	b.ResetTimer()
	for round := 0; round*per < b.N; round++ {
		// Alternate which path goes first so neither always runs warmer.
		var dF, dR time.Duration
		timeFramed := func() {
			start := time.Now()
			framedRound(per)
			dF = time.Since(start)
		}
		timeRaw := func() {
			start := time.Now()
			rawRound(raw.str, raw.str)
			dR = time.Since(start)
		}
		if round%2 == 0 {
			timeFramed()
			timeRaw()
		} else {
			timeRaw()
			timeFramed()
		}
		start := time.Now()
		rawRound(tcp, tcp)
		tTCP += time.Since(start)
		tFramed += dF
		tRaw += dR
		rateF = append(rateF, float64(per*size)/dF.Seconds())
		rateR = append(rateR, float64(per*size)/dR.Seconds())
	}
	b.StopTimer()
	bytes := float64(len(rateF) * per * size)
	mbps := func(d time.Duration) float64 { return bytes / d.Seconds() / 1e6 }
	b.ReportMetric(mbps(tFramed), "framed_MB/s")
	b.ReportMetric(mbps(tRaw), "rawquic_MB/s")
	b.ReportMetric(mbps(tTCP), "tcp_MB/s")
	b.ReportMetric(medianRatio(rateF, rateR), "framed/raw")
}

// tcpSink is a TCP loopback connection whose server reads rounds of a fixed
// size and acknowledges each with one byte.
type tcpSink struct {
	net.Conn
	ln net.Listener
}

func (t *tcpSink) Close() error { t.Conn.Close(); return t.ln.Close() }

func startTCPSink(b *testing.B, round int64) *tcpSink {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 1<<20)
		for {
			for left := round; left > 0; {
				n, err := c.Read(buf[:min(int64(len(buf)), left)])
				left -= int64(n)
				if err != nil {
					return
				}
			}
			if _, err := c.Write([]byte{1}); err != nil {
				return
			}
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	return &tcpSink{Conn: c, ln: ln}
}

// rawEcho is a quic-go server and client with the same configuration and TLS
// as endpoints, echoing each stream: the unary baselines.
type rawEcho struct {
	srvTr, cliTr *qgo.Transport
	conn         *qgo.Conn
	bufs         sync.Pool
}

func startRawEcho(b testing.TB) *rawEcho {
	b.Helper()
	cfg := Config{}.withDefaults()
	mat, err := loadTLS(TLSConfig{}, quietLogger())
	if err != nil {
		b.Fatal(err)
	}
	listen := func() *qgo.Transport {
		udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			b.Fatal(err)
		}
		tuneUDPBuffers(udp, quietLogger())
		return &qgo.Transport{Conn: udp}
	}
	r := &rawEcho{srvTr: listen(), cliTr: listen()}
	r.bufs.New = func() any { s := make([]byte, 0, 4096); return &s }
	ln, err := r.srvTr.Listen(mat.server, quicConfig(cfg, true))
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			go func() {
				for {
					str, err := c.AcceptStream(context.Background())
					if err != nil {
						return
					}
					go func() {
						bp := r.bufs.Get().(*[]byte)
						buf, err := readAll(str, (*bp)[:0])
						if err == nil {
							str.Write(buf)
						}
						str.Close()
						*bp = buf
						r.bufs.Put(bp)
					}()
				}
			}()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r.conn, err = r.cliTr.Dial(ctx, r.srvTr.Conn.LocalAddr(), mat.client, quicConfig(cfg, false))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		r.conn.CloseWithError(0, "")
		r.cliTr.Close()
		r.srvTr.Close()
		r.cliTr.Conn.Close()
		r.srvTr.Conn.Close()
	})
	return r
}

func readAll(r io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// call is one raw echo round trip.
func (r *rawEcho) call(ctx context.Context, req []byte) error {
	str, err := r.conn.OpenStreamSync(ctx)
	if err != nil {
		return err
	}
	if _, err := str.Write(req); err != nil {
		return err
	}
	str.Close()
	bp := r.bufs.Get().(*[]byte)
	buf, err := readAll(str, (*bp)[:0])
	*bp = buf
	r.bufs.Put(bp)
	if err == nil && len(buf) != len(req) {
		err = fmt.Errorf("echo of %d bytes returned %d", len(req), len(buf))
	}
	return err
}

// latencies collects per-call durations and reports percentiles.
type latencies []time.Duration

func (l latencies) pct(p float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	s := slices.Clone(l)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// runConcurrent makes n calls from g goroutines and returns per-call
// latencies and the elapsed time.
func runConcurrent(b *testing.B, g, n int, call func() error) (latencies, time.Duration) {
	lat := make(latencies, n)
	var next sync.WaitGroup
	var mu sync.Mutex
	i := 0
	start := time.Now()
	for range g {
		next.Go(func() {
			for {
				mu.Lock()
				k := i
				i++
				mu.Unlock()
				if k >= n {
					return
				}
				t0 := time.Now()
				if err := call(); err != nil {
					b.Error(err)
					return
				}
				lat[k] = time.Since(t0)
			}
		})
	}
	next.Wait()
	return lat, time.Since(start)
}

// benchUnary alternates batches of framed Calls and raw echoes.
func benchUnary(b *testing.B, goroutines, size int) {
	srv, cli := benchPair(b)
	raw := startRawEcho(b)
	ctx := context.Background()
	req := make([]byte, size)
	binary.BigEndian.PutUint64(req, 42)
	// A Raw body is sent verbatim, so both paths move the same bytes.
	framedRaw := func() error {
		f, err := cli.CallRaw(ctx, srv.Addr(), typeBenchEcho, req)
		if err == nil && len(f.Body) != size {
			err = fmt.Errorf("echo of %d bytes returned %d", size, len(f.Body))
		}
		return err
	}
	rawCall := func() error { return raw.call(ctx, req) }
	// Warm up.
	runConcurrent(b, goroutines, 2000, framedRaw)
	runConcurrent(b, goroutines, 2000, rawCall)

	const batch = 2000
	var latF, latR latencies
	var tF, tR time.Duration
	var rateF, rateR []float64
	b.ResetTimer()
	for done, k := 0, 0; done < b.N; k++ {
		n := min(batch, b.N-done)
		var lf, lr latencies
		var df, dr time.Duration
		if k%2 == 0 {
			lf, df = runConcurrent(b, goroutines, n, framedRaw)
			lr, dr = runConcurrent(b, goroutines, n, rawCall)
		} else {
			lr, dr = runConcurrent(b, goroutines, n, rawCall)
			lf, df = runConcurrent(b, goroutines, n, framedRaw)
		}
		latF, tF = append(latF, lf...), tF+df
		latR, tR = append(latR, lr...), tR+dr
		rateF = append(rateF, float64(n)/df.Seconds())
		rateR = append(rateR, float64(n)/dr.Seconds())
		done += n
	}
	b.StopTimer()
	b.ReportMetric(float64(len(latF))/tF.Seconds(), "calls/s")
	b.ReportMetric(us(latF.pct(0.50)), "p50_us")
	b.ReportMetric(us(latF.pct(0.99)), "p99_us")
	b.ReportMetric(float64(len(latR))/tR.Seconds(), "raw_calls/s")
	b.ReportMetric(us(latR.pct(0.50)), "raw_p50_us")
	b.ReportMetric(us(latR.pct(0.99)), "raw_p99_us")
	b.ReportMetric(medianRatio(rateF, rateR), "calls/raw")
}

// BenchmarkUnaryConcurrent: 64 concurrent unary calls of 1 KiB.
func BenchmarkUnaryConcurrent(b *testing.B) { benchUnary(b, 64, 1<<10) }

// BenchmarkUnarySmall: one caller, 16-byte requests: the round-trip latency.
func BenchmarkUnarySmall(b *testing.B) { benchUnary(b, 1, 16) }

// BenchmarkUnaryLarge: 4 concurrent unary echoes of 600 KiB, the size of a
// produce request at full load, alternating batches with the endpoints' body
// budget (each body read into one allocation of its length) and without it
// (each body's buffer grown as its bytes arrive, copying what it holds at
// every doubling). budget/growing is the median ratio of the batches' rates.
func BenchmarkUnaryLarge(b *testing.B) {
	srv, cli := benchPair(b)
	// Without: an exhausted budget (no call is in flight between batches,
	// so no body holds any of it).
	setBudget := func(on bool) {
		for _, e := range []*Endpoint{srv, cli} {
			if on {
				e.bodyBudget.avail.Store(defaultBodyBudget)
			} else {
				e.bodyBudget.avail.Store(0)
			}
		}
	}
	ctx := context.Background()
	const size = 600 << 10
	req := make([]byte, size)
	call := func() error {
		f, err := cli.CallRaw(ctx, srv.Addr(), typeBenchEcho, req)
		if err == nil && len(f.Body) != size {
			err = fmt.Errorf("echo of %d bytes returned %d", size, len(f.Body))
		}
		return err
	}
	runConcurrent(b, 4, 100, call) // warm up
	const batch = 100
	var rateOn, rateOff []float64
	var tOn time.Duration
	var nOn int
	b.ResetTimer()
	for done, k := 0, 0; done < b.N; k++ {
		n := min(batch, b.N-done)
		for _, on := range [2]bool{k%2 == 0, k%2 != 0} {
			setBudget(on)
			_, d := runConcurrent(b, 4, n, call)
			if on {
				rateOn, tOn, nOn = append(rateOn, float64(n)/d.Seconds()), tOn+d, nOn+n
			} else {
				rateOff = append(rateOff, float64(n)/d.Seconds())
			}
		}
		done += n
	}
	b.StopTimer()
	b.ReportMetric(float64(nOn)*2*size/tOn.Seconds()/1e6, "MB/s")
	b.ReportMetric(medianRatio(rateOn, rateOff), "budget/growing")
}
