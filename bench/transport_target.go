package bench

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	qgo "github.com/quic-go/quic-go"
)

// The transport at the target share: what moving the target's bytes costs
// by itself on this machine.
//
// The share target compares the cluster with one raw QUIC stream using
// every CPU: replicated payload ≥ TargetShare × (raw MB/s ÷ RF). A cluster
// meeting it moves that payload RF times at once (producer to leader,
// leader to each follower), each hop on its own connection at the payload's
// rate, far below the rate at which the one raw stream moves its bytes
// most cheaply; and it does everything else a replicated log does
// (storage, the protocol, making the producers' records) on the CPU the
// transport leaves. So after the raw rounds the bench runs RF connections
// of their own sockets at once, each paced at the target's payload rate,
// and reports the CPUs they take alone. What is left of the machine's
// CPUs, per payload MB at that rate, is the budget the rest of the cluster
// would have to fit in to meet the target; the share target's Why sets it
// beside what this run's cluster and bench spent per payload MB.

// TargetShare is the share of the transport ceiling to reach.
const TargetShare = 0.75

// TransportAtTarget is RF raw connections paced at the target's payload
// rate (JSON transport.at_target).
type TransportAtTarget struct {
	Share       float64 `json:"share"`       // TargetShare
	Connections int     `json:"connections"` // the replication factor, each its own pair of sockets
	// PaceMBPerSec is each connection's pace: TargetShare × raw MB/s ÷ RF,
	// the payload MB/s of a cluster at the target.
	PaceMBPerSec float64   `json:"pace_mb_per_sec"`
	MBPerSec     float64   `json:"mb_per_sec"` // what the connections moved together, median of the rounds
	CPUs         float64   `json:"cpus"`       // this process's CPU time ÷ wall time, median of the rounds
	CPURounds    []float64 `json:"rounds_cpus"`
	CPUMsPerMB   float64   `json:"cpu_ms_per_mb"` // per MB moved, median of the rounds
	// KeptPace: every round moved at least 97% of the bytes its pace allowed.
	KeptPace bool `json:"kept_pace"`
	// RestMsPerPayloadMB is what the machine's CPUs leave for everything
	// but the transport, per payload MB at the pace: (CPUs of the machine
	// − CPUs) × 1000 ÷ PaceMBPerSec; 0 when nothing is left or the pace
	// was not kept.
	RestMsPerPayloadMB float64 `json:"rest_ms_per_payload_mb"`
	MachineCPUs        int     `json:"machine_cpus"`
}

// runTransportAtTarget runs cfg.Rounds rounds of cfg.Duration of rf
// connections, each paced at TargetShare × rawMBPerSec ÷ rf MB/s, on a
// machine of cpus CPUs.
func runTransportAtTarget(ctx context.Context, cfg TransportConfig, rawMBPerSec float64, rf, cpus int, progress func(done, total int)) (TransportAtTarget, error) {
	res := TransportAtTarget{Share: TargetShare, Connections: rf, PaceMBPerSec: TargetShare * rawMBPerSec / float64(rf), MachineCPUs: cpus, KeptPace: true}
	if rf < 1 || rawMBPerSec <= 0 {
		return res, fmt.Errorf("bench: transport at the target: needs a replication factor and a raw rate (have %d, %.1f MB/s)", rf, rawMBPerSec)
	}
	srvTLS, cliTLS, err := rawTLS()
	if err != nil {
		return res, err
	}
	qc := rawQUICConfig(1)
	var eps []*rawEndpoints
	defer func() {
		for _, ep := range eps {
			ep.close()
		}
	}()
	for range rf {
		ep, err := newRawEndpoints(srvTLS, qc)
		if err != nil {
			return res, err
		}
		eps = append(eps, ep)
	}
	pace := res.PaceMBPerSec * 1e6
	var mbs, perMB []float64
	for r := range cfg.Rounds {
		round, err := pacedRound(ctx, eps, cliTLS, qc, cfg, pace)
		if err != nil {
			return res, err
		}
		mbs = append(mbs, round.mbPerSec)
		res.CPURounds = append(res.CPURounds, round.cpus)
		perMB = append(perMB, round.cpuMsPerMB)
		if round.mbPerSec < 0.97*float64(rf)*res.PaceMBPerSec {
			res.KeptPace = false
		}
		if progress != nil {
			progress(r+1, cfg.Rounds)
		}
	}
	res.MBPerSec, res.CPUs, res.CPUMsPerMB = medianOf(mbs), medianOf(res.CPURounds), medianOf(perMB)
	res.RestMsPerPayloadMB = restBudget(cpus, res.CPUs, res.PaceMBPerSec, res.KeptPace)
	return res, nil
}

// restBudget is the CPU, in ms per payload MB at pace MB/s, that a machine
// of cpus CPUs has left when the transport takes used of them: 0 when
// nothing is left or the transport could not keep the pace.
func restBudget(cpus int, used, pace float64, keptPace bool) float64 {
	if !keptPace || pace <= 0 || used >= float64(cpus) {
		return 0
	}
	return (float64(cpus) - used) * 1000 / pace
}

// pacedRoundResult is one round of the paced connections.
type pacedRoundResult struct {
	mbPerSec, cpus, cpuMsPerMB float64
}

// pacedRound dials every endpoint pair once and writes one stream on each,
// paced at pace bytes a second, for cfg.Duration; it measures from the
// first write to the last byte read.
func pacedRound(ctx context.Context, eps []*rawEndpoints, cliTLS *tls.Config, qc *qgo.Config, cfg TransportConfig, pace float64) (pacedRoundResult, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration+30*time.Second)
	defer cancel()
	var received atomic.Int64
	srvDone := make(chan error, len(eps))
	for _, ep := range eps {
		go func() { srvDone <- rawServe(ctx, ep.ln, 1, &received) }()
	}
	conns := make([]*qgo.Conn, len(eps))
	for i, ep := range eps {
		c, err := ep.cli.Dial(ctx, ep.ln.Addr(), cliTLS, qc)
		if err != nil {
			return pacedRoundResult{}, fmt.Errorf("bench: transport at the target: dial: %w", err)
		}
		defer c.CloseWithError(0, "")
		conns[i] = c
	}
	chunk := make([]byte, cfg.Chunk)
	rand.Read(chunk)
	start, cpu0 := time.Now(), selfCPU()
	stop := start.Add(cfg.Duration)
	var wg sync.WaitGroup
	errs := make(chan error, len(conns))
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := rawWrite(ctx, c, chunk, start, stop, pace); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return pacedRoundResult{}, err
	}
	for range eps {
		if err := <-srvDone; err != nil {
			return pacedRoundResult{}, err
		}
	}
	wall, cpu := time.Since(start), selfCPU()-cpu0
	out := pacedRoundResult{mbPerSec: mbps(received.Load(), wall), cpus: cpu / wall.Seconds()}
	if mb := float64(received.Load()) / 1e6; mb > 0 {
		out.cpuMsPerMB = 1000 * cpu / mb
	}
	return out, nil
}

// summary is the measurement in a line: the pace, the CPUs it took and
// what they leave per payload MB.
func (a *TransportAtTarget) summary() string {
	s := fmt.Sprintf("%d raw connections at once, each paced at %.1f MB/s (%.2f × raw ÷ %d), took %.2f of %d CPUs alone (%.2f ms per MB moved)",
		a.Connections, a.PaceMBPerSec, a.Share, a.Connections, a.CPUs, a.MachineCPUs, a.CPUMsPerMB)
	switch {
	case !a.KeptPace:
		return s + fmt.Sprintf(" and could not keep the pace (%.1f MB/s moved of %.1f): the transport alone cannot carry the target here", a.MBPerSec, float64(a.Connections)*a.PaceMBPerSec)
	case a.RestMsPerPayloadMB <= 0:
		return s + ": nothing left for the rest of the cluster"
	}
	return s + fmt.Sprintf(", leaving %.1f ms of CPU per payload MB for everything else (storage, the protocol, the producers)", a.RestMsPerPayloadMB)
}
