package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"time"
)

// profiler captures CPU profiles of the bench process and of every local
// node (through their --metrics-addr /debug/pprof) during one phase, and the
// nodes' allocation profiles after it, into a directory.
type profiler struct {
	dir   string
	nodes map[int32]string // node id -> metrics address
	wg    sync.WaitGroup
	mu    sync.Mutex
	errs  []error
	self  *os.File
	phase string // file name prefix: "" for the full-load run, "latency." for the paced one
}

// startProfiles begins profiling for d; stop waits for the node profiles.
// Files are named <phase>bench.cpu.pprof, <phase>node<id>.cpu.pprof and
// <phase>node<id>.allocs.pprof.
func startProfiles(ctx context.Context, dir, phase string, nodes map[int32]string, d time.Duration) (*profiler, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	p := &profiler{dir: dir, nodes: nodes, phase: phase}
	f, err := os.Create(filepath.Join(dir, phase+"bench.cpu.pprof"))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	p.self = f
	secs := max(1, int(d.Round(time.Second)/time.Second))
	for id, addr := range nodes {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.fetch(ctx, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, secs), fmt.Sprintf("%snode%d.cpu.pprof", phase, id), time.Duration(secs+30)*time.Second)
		}()
	}
	return p, nil
}

func (p *profiler) fetch(ctx context.Context, url, name string, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", url, resp.Status)
		}
		f, err := os.Create(filepath.Join(p.dir, name))
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, resp.Body); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}()
	if err != nil {
		p.mu.Lock()
		p.errs = append(p.errs, err)
		p.mu.Unlock()
	}
}

// stop ends the bench's own CPU profile, waits for the nodes' CPU profiles
// and fetches their allocation profiles.
func (p *profiler) stop(ctx context.Context) error {
	pprof.StopCPUProfile()
	p.self.Close()
	p.wg.Wait()
	for id, addr := range p.nodes {
		p.fetch(ctx, fmt.Sprintf("http://%s/debug/pprof/allocs", addr), fmt.Sprintf("%snode%d.allocs.pprof", p.phase, id), 30*time.Second)
	}
	if len(p.errs) > 0 {
		return fmt.Errorf("bench: profiles: %v", p.errs)
	}
	return nil
}
