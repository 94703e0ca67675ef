package bench

import (
	"fmt"
	"image/color"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// plotBucket is the width of one bar of the failover plot.
const plotBucket = 50 * time.Millisecond

// writePlot draws acknowledged records per 50 ms over the failover run, for
// all partitions and for partition 0 (the one whose leader is killed), with a
// vertical marker at each kill, fence and new leader. The format follows the
// file's extension (.svg, .png, .pdf).
func writePlot(path string, fo *FailoverResult) error {
	tl := fo.timeline
	if tl == nil {
		return fmt.Errorf("bench: no failover run to plot")
	}
	tl.mu.Lock()
	times := append([]time.Time(nil), tl.times...)
	acks := append([]ackRec(nil), tl.acks...)
	tl.mu.Unlock()
	end := time.Duration(fo.Seconds * float64(time.Second))
	n := int(end / plotBucket) // whole buckets only: a partial last one would dip
	all := make([]float64, n)
	p0 := make([]float64, n)
	for i, t := range times {
		b := int(t.Sub(tl.start) / plotBucket)
		if b < 0 || b >= n {
			continue
		}
		all[b]++
		if acks[i].part == 0 {
			p0[b]++
		}
	}
	ymax := 1.0
	for _, v := range all {
		ymax = max(ymax, v)
	}
	series := func(ys []float64) plotter.XYs {
		xy := make(plotter.XYs, len(ys))
		for i, y := range ys {
			xy[i].X = (time.Duration(i) * plotBucket).Seconds()
			xy[i].Y = y
		}
		return xy
	}

	p := plot.New()
	p.Title.Text = fmt.Sprintf("Leader failover: acknowledged records per %v (acks=all, %d rec/s, %d trials)", plotBucket, fo.Rate, len(fo.Trials))
	p.X.Label.Text = "seconds since the load started"
	p.Y.Label.Text = fmt.Sprintf("records acknowledged per %v", plotBucket)
	p.Y.Min = 0
	top := ymax * 1.35 // headroom for the legend
	p.Y.Max = top
	p.Legend.Top = true
	p.Add(plotter.NewGrid())

	lAll, err := plotter.NewLine(series(all))
	if err != nil {
		return err
	}
	lAll.Color = color.RGBA{R: 120, G: 120, B: 120, A: 255}
	lAll.StepStyle = plotter.PostStep
	lP0, err := plotter.NewLine(series(p0))
	if err != nil {
		return err
	}
	lP0.Color = color.RGBA{B: 200, A: 255}
	lP0.Width = vg.Points(1.2)
	lP0.StepStyle = plotter.PostStep
	p.Add(lAll, lP0)
	p.Legend.Add("all partitions", lAll)
	p.Legend.Add("partition 0 (victim's)", lP0)

	type marker struct {
		name  string
		color color.Color
		dash  []vg.Length
		at    func(FailoverTrial) time.Time
	}
	markers := []marker{
		{"kill (SIGKILL)", color.RGBA{R: 220, A: 255}, nil, func(t FailoverTrial) time.Time { return t.killAt }},
		{"fenced", color.RGBA{R: 240, G: 150, A: 255}, []vg.Length{vg.Points(4), vg.Points(2)}, func(t FailoverTrial) time.Time { return t.fenceAt }},
		{"new leader", color.RGBA{G: 160, A: 255}, []vg.Length{vg.Points(1), vg.Points(2)}, func(t FailoverTrial) time.Time { return t.leaderAt }},
	}
	for _, m := range markers {
		first := true
		for _, t := range fo.Trials {
			at := m.at(t)
			if at.IsZero() {
				continue
			}
			x := at.Sub(tl.start).Seconds()
			l, err := plotter.NewLine(plotter.XYs{{X: x, Y: 0}, {X: x, Y: top}})
			if err != nil {
				return err
			}
			l.Color = m.color
			l.Dashes = m.dash
			l.Width = vg.Points(1)
			p.Add(l)
			if first {
				p.Legend.Add(m.name, l)
				first = false
			}
		}
	}
	return p.Save(14*vg.Inch, 5*vg.Inch, path)
}
