package bench

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress shows a progress bar per phase on a terminal, else one line when
// a phase starts and one when it ends.
type progress struct {
	w   io.Writer
	tty bool
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w}
	if w == nil {
		p.w = io.Discard
	}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.tty = true
	}
	return p
}

// phaseBar tracks one phase: by time (d > 0), by record count (n > 0), or by steps.
type phaseBar struct {
	p     *progress
	name  string
	start time.Time
	d     time.Duration
	n     int64
	unit  string
	bar   *progressbar.ProgressBar
}

func (p *progress) newBar(max int64, name, unit string) *progressbar.ProgressBar {
	if !p.tty {
		return nil
	}
	return progressbar.NewOptions64(max,
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription(fmt.Sprintf("%-20s", name)),
		progressbar.OptionSetWidth(30),
		progressbar.OptionShowCount(),
		progressbar.OptionSetItsString(unit),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetRenderBlankState(true),
	)
}

// phase starts a phase measured by duration d or by n records.
func (p *progress) phase(name string, d time.Duration, n int64) *phaseBar {
	b := &phaseBar{p: p, name: name, start: time.Now(), d: d, n: n}
	switch {
	case n > 0:
		b.bar = p.newBar(n, name, "records")
	case d > 0:
		b.bar = p.newBar(d.Milliseconds(), name, "ms")
	}
	if b.bar == nil {
		fmt.Fprintf(p.w, "bench: %s ...\n", name)
	}
	return b
}

// steps starts a phase of n steps (trials, rounds).
func (p *progress) steps(name string, n int, unit string) *phaseBar {
	b := &phaseBar{p: p, name: name, start: time.Now(), n: int64(n), unit: unit}
	b.bar = p.newBar(int64(n), name, unit)
	if b.bar == nil {
		fmt.Fprintf(p.w, "bench: %s: %d %s ...\n", name, n, unit)
	}
	return b
}

// records reports progress in records.
func (b *phaseBar) records(acked int64) {
	if b.bar == nil {
		return
	}
	if b.n > 0 {
		b.bar.Set64(min(acked, b.n))
		return
	}
	b.bar.Describe(fmt.Sprintf("%-20s", fmt.Sprintf("%s %d rec", b.name, acked)))
	b.bar.Set64(min(time.Since(b.start).Milliseconds(), b.d.Milliseconds()))
}

// step reports i of n steps done.
func (b *phaseBar) step(i int) {
	if b.bar != nil {
		b.bar.Set(i)
	} else {
		fmt.Fprintf(b.p.w, "bench: %s: %d/%d %s done\n", b.name, i, b.n, b.unit)
	}
}

func (b *phaseBar) done() {
	if b.bar != nil {
		b.bar.Finish()
		b.bar.Exit()
		return
	}
	fmt.Fprintf(b.p.w, "bench: %s done in %.1fs\n", b.name, time.Since(b.start).Seconds())
}
