package bench

import (
	"context"
	"time"
)

// phaseMeter measures one load phase against the local cluster: the CPU the
// nodes and the bench use, the QUIC packets the nodes lose and, with
// --profile-dir, profiles. Against --bootstrap only the profile of the bench
// itself is taken.
type phaseMeter struct {
	prof     *profiler
	cpu      *cpuMeter
	counters *nodeCounters // the nodes' counters at the start
	end      *nodeCounters // and at the end (stopPhase)
	start    time.Time
}

// startPhase starts measuring a phase of length d; profile files get the
// name prefix profPrefix.
func (r *runner) startPhase(ctx context.Context, profPrefix string, d time.Duration) (*phaseMeter, error) {
	lt, local := r.target.(*localTarget)
	m := &phaseMeter{}
	if r.cfg.ProfileDir != "" {
		var nodes map[int32]string
		if local {
			nodes = lt.metricsAddrs()
		}
		var err error
		if m.prof, err = startProfiles(ctx, r.cfg.ProfileDir, profPrefix, nodes, d); err != nil {
			return nil, err
		}
	}
	if local {
		m.cpu = startCPU(lt.pids())
	}
	m.counters, m.start = r.readCounters(ctx), time.Now()
	return m, nil
}

// stop ends the phase: its CPU usage, QUIC loss and message counts (nil
// when not measured).
func (r *runner) stopPhase(ctx context.Context, m *phaseMeter) (*CPUUsage, *QUICLoss, *Messages) {
	cpu := m.cpu.stop()
	now := r.readCounters(ctx)
	m.end = now
	loss, msgs := now.since(m.counters), now.messagesSince(m.counters, time.Since(m.start))
	msgs.addCPU(cpu)
	if m.prof != nil {
		if err := m.prof.stop(ctx); err != nil {
			r.log.Warn("profiling", "err", err)
		}
	}
	return cpu, loss, msgs
}

// readCounters reads the local nodes' QUIC packet and message counters: nil
// against --bootstrap, without metrics, or when a node does not answer (logged).
func (r *runner) readCounters(ctx context.Context) *nodeCounters {
	lt, ok := r.target.(*localTarget)
	if !ok {
		return nil
	}
	q, err := scrapeNodes(ctx, lt.metricsAddrs())
	if err != nil {
		r.log.Warn("node counters (QUIC loss, messages) not measured", "err", err)
	}
	return q
}
