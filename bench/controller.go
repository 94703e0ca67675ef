package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"paymentlog/quic"
	"paymentlog/wire"
)

// ControllerTrial is one SIGKILL of the active controller. Times run from
// the instant before the kill started (ControllerResult.KillInstant): with
// --kill-cmd, upper bounds.
type ControllerTrial struct {
	Trial         int     `json:"trial"`
	Victim        int32   `json:"victim"`
	NewController int32   `json:"new_controller"`
	ElectedMs     float64 `json:"elected_ms"` // until the metadata names another controller (-1: not seen)
	Ms            float64 `json:"ms"`         // until a topic creation succeeded (-1: not within the timeout)
	Attempts      int     `json:"rounds"`     // request rounds started
	// KillCmdMs is how long the kill took, start to return (-1: no kill);
	// with --kill-cmd each time is at most this much above the true one.
	KillCmdMs float64 `json:"kill_cmd_ms"`
	Error     string  `json:"error,omitempty"`
	// LogsKept: as FailoverTrial.LogsKept.
	LogsKept string `json:"logs_kept,omitempty"`
}

// ControllerResult is the controller failover benchmark's output.
type ControllerResult struct {
	Trials    []ControllerTrial `json:"trials"`
	Ms        Summary           `json:"ms"`
	ElectedMs Summary           `json:"elected_ms"`
	Method    string            `json:"method"`
	// KillInstant: KillInstantSignal (exact) or KillInstantCmdStart (the
	// times are upper bounds, by at most each trial's KillCmdMs).
	KillInstant string  `json:"kill_instant"`
	KillCmdMs   Summary `json:"kill_cmd_ms"`
}

const controllerMethod = "after SIGKILL of the active controller, a round of CreateTopic (1 partition, RF 1) requests goes to every " +
	"other node every 20 ms (rounds overlap, each bounded by the attempt timeout) until one node reports the topic committed"

// runControllerFailover kills the active controller cfg.Trials times and
// measures how long until a topic creation commits.
func (r *runner) runControllerFailover(ctx context.Context) (*ControllerResult, error) {
	cc := r.cfg.Controller
	res := &ControllerResult{Method: controllerMethod, KillInstant: killInstant(r.target)}
	w := newWatcher(ctx, r.ep, r.target.bootstrap(), []string{}, 5*time.Millisecond)
	defer w.close()
	bar := r.progress.steps("controller failover", cc.Trials, "trials")
	var created []string
	for i := range cc.Trials {
		if ctx.Err() != nil {
			break
		}
		tr, name := r.controllerTrial(ctx, w, i+1)
		if name != "" {
			created = append(created, name)
		}
		res.Trials = append(res.Trials, tr)
		if tr.Error != "" {
			r.log.Warn("controller failover trial failed", "trial", i+1, "err", tr.Error)
		}
		bar.step(i + 1)
	}
	bar.done()
	var xs, es, ks []float64
	for _, t := range res.Trials {
		xs = append(xs, t.Ms)
		es = append(es, t.ElectedMs)
		ks = append(ks, t.KillCmdMs)
	}
	res.Ms, res.ElectedMs, res.KillCmdMs = summarizeTrials(xs), summarizeTrials(es), summarizeTrials(ks)
	// Best effort: remove the trial topics.
	if ctx.Err() == nil {
		if _, err := r.waitHealthy(ctx, w, "", cc.Timeout); err == nil {
			for _, name := range created {
				dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				r.admin.DeleteTopic(dctx, name)
				cancel()
			}
		}
	}
	return res, ctx.Err()
}

func (r *runner) controllerTrial(ctx context.Context, w *watcher, n int) (tr ControllerTrial, topic string) {
	cc := r.cfg.Controller
	tr = ControllerTrial{Trial: n, Victim: -1, NewController: -1, ElectedMs: -1, Ms: -1, KillCmdMs: -1}
	if _, err := r.waitHealthy(ctx, w, "", cc.Timeout); err != nil {
		tr.Error = err.Error()
		return tr, ""
	}
	w.quietFor(ctx, 300*time.Millisecond, 3*time.Second)
	v := w.latest()
	tr.Victim = v.md.ControllerID
	name := fmt.Sprintf("bench-controller-%d-%d", time.Now().UnixNano(), n)
	addrs := make([]string, 0, len(v.md.Brokers))
	for _, b := range v.md.Brokers {
		if b.ID != tr.Victim {
			addrs = append(addrs, b.Addr)
		}
	}
	logs := r.markTrialLogs()
	defer func() {
		tr.LogsKept = r.keepIfSlow(logs, "controller-failover", n, longestMs(tr.ElectedMs, tr.Ms), tr.Error != "")
	}()
	killAt := time.Now()
	if err := r.target.kill(ctx, tr.Victim); err != nil {
		tr.Error = err.Error()
		return tr, ""
	}
	tr.KillCmdMs = ms(time.Since(killAt))
	tctx, cancel := context.WithTimeout(ctx, cc.Timeout)
	defer cancel()
	var lastErr error
	if at, attempts, err := r.createUntilCommitted(tctx, addrs, name, cc.Attempt); err == nil {
		tr.Ms = ms(at.Sub(killAt))
		tr.Attempts = attempts
	} else {
		tr.Attempts = attempts
		lastErr = err
	}
	if ev, err := w.waitFor(tctx, killAt, func(md *wire.MetadataResponse) bool {
		return md.ControllerID >= 0 && md.ControllerID != tr.Victim
	}); err == nil {
		tr.ElectedMs = ms(ev.at.Sub(killAt))
		tr.NewController = ev.md.ControllerID
	}
	if tr.Ms < 0 {
		tr.fail(fmt.Sprintf("no topic creation succeeded within %v (last: %v)", cc.Timeout, lastErr))
	}
	if err := r.target.restart(ctx, tr.Victim); err != nil {
		tr.fail("restart: " + err.Error())
	}
	return tr, name
}

// fail adds msg to the reasons the trial failed (a failed restart must not
// replace the failed measurement before it).
func (tr *ControllerTrial) fail(msg string) {
	if tr.Error != "" {
		msg = tr.Error + "; " + msg
	}
	tr.Error = msg
}

// createInterval is how often createUntilCommitted starts another round.
const createInterval = 20 * time.Millisecond

// createUntilCommitted starts a round of CreateTopic requests, one to every
// address, every createInterval (rounds overlap: a round stuck on a dead
// controller does not delay the next), each round bounded by timeout, until
// a node answers that the topic is committed (or already exists, from an
// earlier round that committed). It returns when that answer arrived.
func (r *runner) createUntilCommitted(ctx context.Context, addrs []string, name string, timeout time.Duration) (time.Time, int, error) {
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel (deferred later, so it runs first)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		at  time.Time
		err error
	}
	answers := make(chan answer, 64)
	t := time.NewTicker(createInterval)
	defer t.Stop()
	rounds := 0
	var last error
	for {
		rounds++
		for _, addr := range addrs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cctx, ccancel := context.WithTimeout(ctx, timeout)
				defer ccancel()
				var resp wire.CreateTopicResponse
				req := &wire.CreateTopicRequest{Name: name, Partitions: 1, ReplicationFactor: 1, MinISR: 1}
				// Idempotent for this loop: TopicAlreadyExists counts as
				// committed, so a resend to a node restarted since the
				// connection was made (see quic.Idempotent) changes nothing.
				err := r.ep.Call(quic.Idempotent(cctx), addr, wire.TypeCreateTopic, req, &resp)
				if err == nil && resp.Err != wire.None && resp.Err != wire.TopicAlreadyExists {
					err = resp.Err.Err(resp.Message)
				}
				select {
				case answers <- answer{at: time.Now(), err: err}:
				case <-ctx.Done():
				}
			}()
		}
	wait:
		for {
			select {
			case a := <-answers:
				if a.err == nil {
					return a.at, rounds, nil
				}
				last = a.err
			case <-ctx.Done():
				if last == nil {
					last = ctx.Err()
				}
				return time.Time{}, rounds, last
			case <-t.C:
				break wait
			}
		}
	}
}
