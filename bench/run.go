package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"paymentlog/client"
	"paymentlog/quic"
)

// runner holds what the phases share.
type runner struct {
	cfg      Config
	log      *slog.Logger
	target   target
	ep       *quic.Endpoint // client-only endpoint for the watcher and raw metadata calls
	admin    *client.Admin
	adminCl  *client.Client
	progress *progress
	round    int      // the throughput round running (1-based) with --rounds; 0 otherwise
	slowDir  string   // where slow trials' node logs go (slowtrial.go); made on first use
	ring     *ringLog // the bench's debug log, for slow trials; nil when none are kept
}

// Run runs the benchmarks cfg.Mode selects and returns the report. Without
// cfg.Bootstrap it starts a local cluster and removes it before returning,
// also when ctx is cancelled (Ctrl-C). Phases that fail are recorded in
// Report.Errors and the run goes on with the next phase; Run's error is then
// non-nil too. The report is also written to cfg.JSONPath and the failover
// plot to cfg.PlotPath when set.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	r := &runner{cfg: cfg, log: cfg.Logger, progress: newProgress(cfg.Progress)}
	if cfg.Failover.KeepSlowOver > 0 && len(cfg.Bootstrap) == 0 &&
		(cfg.Mode.runs(ModeFailover) || cfg.Mode.runs(ModeControllerFailover)) {
		// A slow trial's evidence includes the bench's own debug log.
		r.ring = &ringLog{}
		r.log = slog.New(newTeeHandler(cfg.Logger.Handler(), r.ring))
	}
	rep := &Report{StartedAt: time.Now()}
	fail := func(phase string, err error) {
		rep.Errors = append(rep.Errors, fmt.Sprintf("%s: %v", phase, err))
	}

	if cfg.Mode == ModeCPU {
		bar := r.progress.phase("cpu", cfg.Throughput.Duration, 0)
		p := startSpeedProbe(cfg.Throughput.Duration)
		select {
		case <-time.After(cfg.Throughput.Duration):
		case <-ctx.Done():
		}
		rep.CPUProbe = p.stop()
		bar.done()
		rep.Config = reportConfig(cfg, nil)
		return r.finish(rep, ctx.Err())
	}

	// The transport ceiling first, while no cluster competes for the CPUs.
	if cfg.Mode.runs(ModeTransport) || cfg.Mode.runs(ModeThroughput) {
		bar := r.progress.steps("transport", cfg.Transport.Rounds, "rounds")
		t, err := runTransport(ctx, cfg.Transport, func(done, _ int) { bar.step(done) })
		bar.done()
		if err != nil {
			fail("transport", err)
		} else {
			rep.Transport = &t
		}
	}
	if rf := cfg.Throughput.ReplicationFactor; rep.Transport != nil && rf > 0 && ctx.Err() == nil {
		bar := r.progress.steps("transport at the target", cfg.Transport.Rounds, "rounds")
		at, err := runTransportAtTarget(ctx, cfg.Transport, rep.Transport.MBPerSec, rf, runtime.NumCPU(), func(done, _ int) { bar.step(done) })
		bar.done()
		if err != nil {
			fail("transport at the target", err)
		} else {
			rep.Transport.AtTarget = &at
		}
	}

	// The raw disk baseline, also before the cluster starts.
	if cfg.Mode.runs(ModeTransport) || cfg.Mode.runs(ModeThroughput) {
		bar := r.progress.steps("disk", cfg.Transport.Rounds, "rounds")
		dk, err := runDisk(ctx, cfg.BaseDir, cfg.Transport.Duration, cfg.Transport.Rounds, func(done, _ int) { bar.step(done) })
		bar.done()
		if err != nil {
			fail("disk", err)
		} else {
			rep.Disk = &dk
		}
	}

	var clusterInfo map[string]any
	if cfg.Mode != ModeTransport && ctx.Err() == nil {
		if err := r.open(ctx); err != nil {
			rep.Config = reportConfig(cfg, nil)
			fail("cluster", err)
			return r.finish(rep, errors.New(rep.Errors[len(rep.Errors)-1]))
		}
		defer r.close()
		clusterInfo = r.target.info()
	}
	rep.Config = reportConfig(cfg, clusterInfo)

	if cfg.Mode.runs(ModeThroughput) && ctx.Err() == nil {
		t, err := r.runThroughputRounds(ctx)
		if t != nil && rep.Transport != nil && rep.Transport.MBPerSec > 0 {
			ceiling := rep.Transport.MBPerSec / float64(cfg.Throughput.ReplicationFactor)
			t.TransportRatio = t.MBPerSec / ceiling
			t.TransportCPUMsPerMB = rep.Transport.CPUMsPerMB * float64(cfg.Throughput.ReplicationFactor)
			for i := range t.Rounds {
				t.Rounds[i].TransportRatio = t.Rounds[i].MBPerSec / ceiling
			}
		}
		if t != nil && rep.Disk != nil && rep.Disk.MBPerSec > 0 {
			t.DiskRatio = t.ReplicatedMBPerSec / rep.Disk.MBPerSec
		}
		rep.Throughput = t
		if err != nil {
			fail("throughput", err)
		}
	}
	killable := r.target != nil && r.target.canKill()
	if cfg.Mode.runs(ModeFailover) && ctx.Err() == nil {
		if !killable {
			rep.Skipped = append(rep.Skipped, "failover: needs --kill-cmd and --restart-cmd with --bootstrap")
		} else {
			f, err := r.runFailover(ctx)
			rep.Failover = f
			if err != nil {
				fail("failover", err)
			}
			if f != nil {
				for _, e := range f.problems() {
					fail("failover", e)
				}
			}
		}
	}
	if cfg.Mode.runs(ModeControllerFailover) && ctx.Err() == nil {
		if !killable {
			rep.Skipped = append(rep.Skipped, "controller-failover: needs --kill-cmd and --restart-cmd with --bootstrap")
		} else {
			c, err := r.runControllerFailover(ctx)
			rep.ControllerFailover = c
			if err != nil {
				fail("controller-failover", err)
			}
			if c != nil {
				for _, t := range c.Trials {
					if t.Error != "" {
						fail("controller-failover", fmt.Errorf("trial %d: %s", t.Trial, t.Error))
					}
				}
			}
		}
	}
	if cfg.Mode.runs(ModeRolling) && ctx.Err() == nil {
		ro, err := r.runRolling(ctx)
		rep.Rolling = ro
		if err != nil {
			fail("rolling", err)
		}
		if ro != nil {
			for _, e := range ro.problems() {
				fail("rolling", e)
			}
		}
	}
	if lt, ok := r.target.(*localTarget); ok {
		for _, c := range lt.crashes() {
			rep.Crashes = append(rep.Crashes, fmt.Sprintf("node %d (pid %d) exited on its own: %v; log %s", c.ID, c.PID, c.Err, c.LogPath))
		}
		if len(rep.Crashes) > 0 {
			fail("cluster", fmt.Errorf("%d node crash(es)", len(rep.Crashes)))
		}
	}
	var err error
	if ctx.Err() != nil {
		err = ctx.Err()
	} else if len(rep.Errors) > 0 {
		err = errors.New(rep.Errors[0])
	}
	return r.finish(rep, err)
}

// finish computes the targets and writes the JSON and the plot.
func (r *runner) finish(rep *Report, err error) (*Report, error) {
	rep.Seconds = time.Since(rep.StartedAt).Seconds()
	rep.checkTargets(r.cfg)
	if r.cfg.PlotPath != "" && rep.Failover != nil {
		if perr := writePlot(r.cfg.PlotPath, rep.Failover); perr != nil {
			rep.Errors = append(rep.Errors, "plot: "+perr.Error())
			err = errors.Join(err, perr)
		}
	}
	if r.cfg.JSONPath != "" {
		if jerr := rep.writeJSON(r.cfg.JSONPath); jerr != nil {
			err = errors.Join(err, jerr)
		}
	}
	return rep, err
}

// open starts (or connects to) the cluster and the admin client.
func (r *runner) open(ctx context.Context) error {
	if len(r.cfg.Bootstrap) > 0 {
		r.target = &externalTarget{addrs: r.cfg.Bootstrap, tlsCfg: r.cfg.TLS, killCmd: r.cfg.KillCmd, restartCmd: r.cfg.RestartCmd}
	} else {
		fmt.Fprintf(r.progress.w, "bench: starting a local %d-node cluster ...\n", r.cfg.Nodes)
		t, err := startLocal(ctx, r.cfg, r.log)
		if err != nil {
			return err
		}
		r.target = t
	}
	ep, err := quic.New(ctx, quic.Config{TLS: r.target.tls(), Logger: r.log})
	if err != nil {
		return err
	}
	r.ep = ep
	cl, err := client.New(ctx, r.clientConfig())
	if err != nil {
		return err
	}
	r.adminCl, r.admin = cl, cl.Admin()
	return nil
}

func (r *runner) close() {
	if r.adminCl != nil {
		closeClient(r.adminCl)
	}
	if r.ep != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		r.ep.Shutdown(ctx)
		cancel()
	}
	if r.target != nil {
		if err := r.target.close(); err != nil {
			r.log.Warn("closing the cluster", "err", err)
		}
	}
}

func (r *runner) clientConfig() client.Config {
	return client.Config{Bootstrap: r.target.bootstrap(), TLS: r.target.tls(), Logger: r.log}
}

// createTopic creates a bench topic.
func (r *runner) createTopic(ctx context.Context, name string, partitions, rf, minISR int) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := r.admin.CreateTopic(ctx, client.TopicSpec{Name: name, Partitions: int32(partitions), ReplicationFactor: int32(rf), MinISR: int32(minISR)})
	if err != nil {
		return fmt.Errorf("bench: create topic %s: %w", name, err)
	}
	return nil
}
