package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"paymentlog/wire"
)

// ControllerTrial is one SIGKILL of the active controller.
type ControllerTrial struct {
	Trial         int     `json:"trial"`
	Victim        int32   `json:"victim"`
	NewController int32   `json:"new_controller"`
	ElectedMs     float64 `json:"elected_ms"` // until the metadata names another controller (-1: not seen)
	Ms            float64 `json:"ms"`         // until a topic creation succeeded (-1: not within the timeout)
	Attempts      int     `json:"attempts"`
	Error         string  `json:"error,omitempty"`
}

// ControllerResult is the controller failover benchmark's output.
type ControllerResult struct {
	Trials    []ControllerTrial `json:"trials"`
	Ms        Summary           `json:"ms"`
	ElectedMs Summary           `json:"elected_ms"`
	Method    string            `json:"method"`
}

const controllerMethod = "after SIGKILL of the active controller, CreateTopic (1 partition, RF 1) is sent to every node at once, " +
	"again every 10 ms after all answered or the attempt timed out, until one node reports it committed"

// runControllerFailover kills the active controller cfg.Trials times and
// measures how long until a topic creation commits.
func (r *runner) runControllerFailover(ctx context.Context) (*ControllerResult, error) {
	cc := r.cfg.Controller
	res := &ControllerResult{Method: controllerMethod}
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
	var xs, es []float64
	for _, t := range res.Trials {
		if t.Ms >= 0 {
			xs = append(xs, t.Ms)
		}
		if t.ElectedMs >= 0 {
			es = append(es, t.ElectedMs)
		}
	}
	res.Ms, res.ElectedMs = summarize(xs), summarize(es)
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

func (r *runner) controllerTrial(ctx context.Context, w *watcher, n int) (ControllerTrial, string) {
	cc := r.cfg.Controller
	tr := ControllerTrial{Trial: n, Victim: -1, NewController: -1, ElectedMs: -1, Ms: -1}
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
	killAt := time.Now()
	if err := r.target.kill(ctx, tr.Victim); err != nil {
		tr.Error = err.Error()
		return tr, ""
	}
	tctx, cancel := context.WithTimeout(ctx, cc.Timeout)
	defer cancel()
	var lastErr error
	for tctx.Err() == nil {
		tr.Attempts++
		ok, err := r.createEverywhere(tctx, addrs, name, cc.Attempt)
		if ok {
			tr.Ms = ms(time.Since(killAt))
			break
		}
		lastErr = err
		select {
		case <-tctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
	if ev, err := w.waitFor(tctx, killAt, func(md *wire.MetadataResponse) bool {
		return md.ControllerID >= 0 && md.ControllerID != tr.Victim
	}); err == nil {
		tr.ElectedMs = ms(ev.at.Sub(killAt))
		tr.NewController = ev.md.ControllerID
	}
	if tr.Ms < 0 {
		tr.Error = fmt.Sprintf("no topic creation succeeded within %v (last: %v)", cc.Timeout, lastErr)
	}
	if err := r.target.restart(ctx, tr.Victim); err != nil {
		tr.Error = "restart: " + err.Error()
	}
	return tr, name
}

// createEverywhere sends one CreateTopic to every address at once and reports
// whether any node answered that the topic is committed (or already exists,
// from an earlier attempt that committed).
func (r *runner) createEverywhere(ctx context.Context, addrs []string, name string, timeout time.Duration) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type answer struct {
		ok  bool
		err error
	}
	ch := make(chan answer, len(addrs))
	var wg sync.WaitGroup
	for _, a := range addrs {
		wg.Add(1)
		go func(addr string) {
			defer wg.Done()
			var resp wire.CreateTopicResponse
			req := &wire.CreateTopicRequest{Name: name, Partitions: 1, ReplicationFactor: 1, MinISR: 1}
			if err := r.ep.Call(ctx, addr, wire.TypeCreateTopic, req, &resp); err != nil {
				ch <- answer{err: err}
				return
			}
			switch resp.Err {
			case wire.None, wire.TopicAlreadyExists:
				ch <- answer{ok: true}
			default:
				ch <- answer{err: resp.Err.Err(resp.Message)}
			}
		}(a)
	}
	var last error
	for range addrs {
		a := <-ch
		if a.ok {
			return true, nil // the others finish in the background, bounded by ctx
		}
		last = a.err
	}
	wg.Wait()
	return false, last
}
