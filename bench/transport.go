package bench

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"sync"
	"sync/atomic"
	"time"

	qgo "github.com/quic-go/quic-go"

	plquic "paymentlog/quic"
)

// TransportResult is the raw QUIC baseline: bulk bytes over streams of one
// QUIC connection between two endpoints on this machine (TLS 1.3, the
// transport package's flow-control windows), no framing and no storage.
type TransportResult struct {
	MBPerSec float64   `json:"mb_per_sec"` // median of the rounds
	Rounds   []float64 `json:"rounds_mb_per_sec"`
	// CPUMsPerMB is this process's CPU time (both ends of the connection,
	// the kernel's loopback path included) per MB received: the median of
	// CPURounds. It is what the transport alone costs to move a MB, the
	// floor the cluster's CPU per MB is compared with (ThroughputResult).
	CPUMsPerMB float64   `json:"cpu_ms_per_mb,omitempty"`
	CPURounds  []float64 `json:"rounds_cpu_ms_per_mb,omitempty"`
	Streams    int       `json:"streams"`
	ChunkB     int       `json:"chunk_bytes"`
	RoundMs    float64   `json:"round_ms"`
	Cipher     string    `json:"cipher"`
	// ReceiveOffload: the sockets read coalesced packet trains (UDP_GRO), as the nodes' do.
	ReceiveOffload bool `json:"receive_offload"`
	// AtTarget is the transport moving a cluster's bytes at the target
	// share, alone (transport_target.go).
	AtTarget *TransportAtTarget `json:"at_target,omitempty"`
}

// The same flow-control windows as package quic (quic/tuning.go), so the
// baseline is the ceiling of the transport as the nodes configure it.
const (
	rawInitialStreamWindow = 4 << 20
	rawMaxStreamWindow     = 32 << 20
	rawInitialConnWindow   = 8 << 20
	rawMaxConnWindow       = 64 << 20
	rawALPN                = "paymentlog-bench-raw"
)

// runTransport measures raw QUIC throughput, cfg.Rounds rounds of cfg.Duration.
func runTransport(ctx context.Context, cfg TransportConfig, progress func(done, total int)) (TransportResult, error) {
	res := TransportResult{Streams: cfg.Streams, ChunkB: cfg.Chunk, RoundMs: ms(cfg.Duration)}
	srvTLS, cliTLS, err := rawTLS()
	if err != nil {
		return res, err
	}
	qc := rawQUICConfig(cfg.Streams)
	ep, err := newRawEndpoints(srvTLS, qc)
	if err != nil {
		return res, err
	}
	defer ep.close()
	res.ReceiveOffload = ep.gro
	// A short warm-up round, discarded: the first connection pays for socket
	// buffer growth and congestion-window discovery.
	warm := cfg
	warm.Duration = min(cfg.Duration, 300*time.Millisecond)
	if _, err := rawRound(ctx, ep.ln, ep.cli, cliTLS, qc, warm); err != nil {
		return res, err
	}
	for r := range cfg.Rounds {
		round, err := rawRound(ctx, ep.ln, ep.cli, cliTLS, qc, cfg)
		if err != nil {
			return res, err
		}
		res.Rounds = append(res.Rounds, round.mbPerSec)
		if round.cpuMsPerMB > 0 {
			res.CPURounds = append(res.CPURounds, round.cpuMsPerMB)
		}
		res.Cipher = round.cipher
		if progress != nil {
			progress(r+1, cfg.Rounds)
		}
	}
	res.MBPerSec = medianOf(res.Rounds)
	if len(res.CPURounds) > 0 {
		res.CPUMsPerMB = medianOf(res.CPURounds)
	}
	return res, nil
}

// rawQUICConfig is the raw connections' QUIC configuration, for streams
// streams on a connection.
func rawQUICConfig(streams int) *qgo.Config {
	return &qgo.Config{
		MaxIdleTimeout:                 10 * time.Second,
		InitialStreamReceiveWindow:     rawInitialStreamWindow,
		MaxStreamReceiveWindow:         rawMaxStreamWindow,
		InitialConnectionReceiveWindow: rawInitialConnWindow,
		MaxConnectionReceiveWindow:     rawMaxConnWindow,
		MaxIncomingStreams:             int64(streams) + 10,
	}
}

// rawRoundResult is one round's throughput, the CPU it cost and the cipher.
type rawRoundResult struct {
	mbPerSec, cpuMsPerMB float64
	cipher               string
}

// rawRound dials ln, writes on cfg.Streams streams for cfg.Duration, and
// returns the MB/s the server received (first write to last byte read) and
// the process's CPU time per MB over the same span.
func rawRound(ctx context.Context, ln *qgo.Listener, tr *qgo.Transport, cliTLS *tls.Config, qc *qgo.Config, cfg TransportConfig) (rawRoundResult, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration+30*time.Second)
	defer cancel()
	var received atomic.Int64
	srvDone := make(chan error, 1)
	go func() { srvDone <- rawServe(ctx, ln, cfg.Streams, &received) }()

	conn, err := tr.Dial(ctx, ln.Addr(), cliTLS, qc)
	if err != nil {
		return rawRoundResult{}, fmt.Errorf("bench: transport: dial: %w", err)
	}
	defer conn.CloseWithError(0, "")
	cipher := tls.CipherSuiteName(conn.ConnectionState().TLS.CipherSuite)
	chunk := make([]byte, cfg.Chunk)
	rand.Read(chunk)
	start, cpu0 := time.Now(), selfCPU()
	stop := start.Add(cfg.Duration)
	var wg sync.WaitGroup
	errs := make(chan error, cfg.Streams)
	for range cfg.Streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := rawWrite(ctx, conn, chunk, start, stop, 0); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return rawRoundResult{}, err
	}
	if err := <-srvDone; err != nil {
		return rawRoundResult{}, err
	}
	out := rawRoundResult{mbPerSec: mbps(received.Load(), time.Since(start)), cipher: cipher}
	if mb, cpu := float64(received.Load())/1e6, selfCPU()-cpu0; mb > 0 && cpu > 0 {
		out.cpuMsPerMB = 1000 * cpu / mb
	}
	return out, nil
}

// rawWrite opens a stream on conn and writes chunk on it until stop, then
// closes it. With pace > 0 it writes at most pace bytes a second since
// start (ahead of that by a whole millisecond, it sleeps); with 0, as fast
// as the stream takes them.
func rawWrite(ctx context.Context, conn *qgo.Conn, chunk []byte, start, stop time.Time, pace float64) error {
	s, err := conn.OpenStreamSync(ctx)
	if err != nil {
		return fmt.Errorf("bench: transport: open stream: %w", err)
	}
	sent := 0
	for now := time.Now(); now.Before(stop); now = time.Now() {
		if pace > 0 {
			due := start.Add(time.Duration(float64(sent) / pace * float64(time.Second)))
			if ahead := due.Sub(now); ahead >= time.Millisecond {
				time.Sleep(ahead)
				continue
			}
		}
		if _, err := s.Write(chunk); err != nil {
			return fmt.Errorf("bench: transport: write: %w", err)
		}
		sent += len(chunk)
	}
	return s.Close()
}

// rawEndpoints is a server and a client socket, set up as the nodes' are
// (buffers, receive offload), with a QUIC transport and a listener on the
// server's.
type rawEndpoints struct {
	ln      *qgo.Listener
	cli     *qgo.Transport
	gro     bool // the server's socket reads coalesced packet trains
	closers []io.Closer
}

func newRawEndpoints(srvTLS *tls.Config, qc *qgo.Config) (*rawEndpoints, error) {
	ep := &rawEndpoints{}
	srvPC, gro, err := plquic.ListenPacket("127.0.0.1:0", nil)
	if err != nil {
		return nil, fmt.Errorf("bench: transport: %w", err)
	}
	ep.gro = gro
	ep.closers = append(ep.closers, srvPC)
	cliPC, _, err := plquic.ListenPacket("127.0.0.1:0", nil)
	if err != nil {
		ep.close()
		return nil, fmt.Errorf("bench: transport: %w", err)
	}
	ep.closers = append(ep.closers, cliPC)
	srvTr := &qgo.Transport{Conn: srvPC}
	ep.cli = &qgo.Transport{Conn: cliPC}
	ep.closers = append(ep.closers, srvTr, ep.cli)
	if ep.ln, err = srvTr.Listen(srvTLS, qc); err != nil {
		ep.close()
		return nil, fmt.Errorf("bench: transport: listen: %w", err)
	}
	ep.closers = append(ep.closers, ep.ln)
	return ep, nil
}

// close closes what newRawEndpoints opened, the last opened first.
func (ep *rawEndpoints) close() {
	for i := len(ep.closers) - 1; i >= 0; i-- {
		ep.closers[i].Close()
	}
}

// rawServe accepts one connection and n streams and discards everything
// until each stream ends.
func rawServe(ctx context.Context, ln *qgo.Listener, n int, received *atomic.Int64) error {
	conn, err := ln.Accept(ctx)
	if err != nil {
		return fmt.Errorf("bench: transport: accept: %w", err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		s, err := conn.AcceptStream(ctx)
		if err != nil {
			return fmt.Errorf("bench: transport: accept stream: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 256<<10)
			for {
				k, err := s.Read(buf)
				received.Add(int64(k))
				if errors.Is(err, io.EOF) {
					return
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return fmt.Errorf("bench: transport: read: %w", err)
	}
	return nil
}

// rawTLS makes an ephemeral self-signed P-256 certificate; the client does not
// verify it (the handshake's cost is outside the measurement).
func rawTLS() (srv, cli *tls.Config, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "bench"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	cert := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	srv = &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{rawALPN}, MinVersion: tls.VersionTLS13}
	cli = &tls.Config{InsecureSkipVerify: true, NextProtos: []string{rawALPN}, MinVersion: tls.VersionTLS13} //nolint:gosec // ephemeral local benchmark peer
	return srv, cli, nil
}
