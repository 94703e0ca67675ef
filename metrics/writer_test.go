package metrics_test

import (
	"strings"
	"testing"
	"time"

	"paymentlog/metrics"
	"paymentlog/metrics/promtest"
)

// The writer's output of every kind of family, with labels that need
// escaping, reads back through the strict parser with the same values.
func TestWriterOutputParses(t *testing.T) {
	var b strings.Builder
	w := metrics.NewWriter(&b)
	w.Counter("app_requests_total", "Requests handled.", 42)
	w.Gauge("app_temperature", `Help with a \ backslash and a
newline.`, -3)
	w.Family("app_partition_offset", metrics.TypeGauge, "Offsets by partition.")
	w.Int(metrics.Labels{"topic", `we"ird\top` + "\nic", "partition", "0"}, 7)
	w.Int(metrics.Labels{"topic", "plain", "partition", "1"}, 8)
	w.Family("app_ratio", metrics.TypeGauge, "A float.")
	w.Float(nil, 0.125)
	h := metrics.NewHistogram(nil)
	h.Observe(300 * time.Microsecond)
	h.Observe(3 * time.Millisecond)
	h.Observe(time.Minute)
	w.Family("app_latency_seconds", metrics.TypeHistogram, "Latency.")
	w.Histogram(metrics.Labels{"acks", "all"}, h.Snapshot())
	w.Histogram(metrics.Labels{"acks", "1"}, metrics.NewHistogram(nil).Snapshot())
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	e, err := promtest.Parse(strings.NewReader(out))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	check := func(name string, want float64, labels ...string) {
		t.Helper()
		if v, ok := e.Value(name, labels...); !ok || v != want {
			t.Fatalf("%s%v = %v (found %v), want %v\n%s", name, labels, v, ok, want, out)
		}
	}
	check("app_requests_total", 42)
	check("app_temperature", -3)
	check("app_partition_offset", 7, "topic", `we"ird\top`+"\nic", "partition", "0")
	check("app_partition_offset", 8, "topic", "plain", "partition", "1")
	check("app_ratio", 0.125)
	if f := e.Families["app_temperature"]; f.Help != "Help with a \\ backslash and a\nnewline." || f.Type != "gauge" {
		t.Fatalf("help/type = %q/%q", f.Help, f.Type)
	}
	if c, ok := e.HistogramCount("app_latency_seconds", "acks", "all"); !ok || c != 3 {
		t.Fatalf("histogram count = %v %v\n%s", c, ok, out)
	}
	for _, line := range []string{
		`app_latency_seconds_bucket{acks="all",le="0.00025"} 0`,
		`app_latency_seconds_bucket{acks="all",le="0.0005"} 1`,
		`app_latency_seconds_bucket{acks="all",le="0.005"} 2`,
		`app_latency_seconds_bucket{acks="all",le="10"} 2`,
		`app_latency_seconds_bucket{acks="all",le="+Inf"} 3`,
		`app_latency_seconds_count{acks="all"} 3`,
		`app_latency_seconds_sum{acks="all"} 60.0033`,
		`app_partition_offset{topic="we\"ird\\top\nic",partition="0"} 7`,
		"# TYPE app_requests_total counter",
	} {
		if !strings.Contains(out, line+"\n") {
			t.Errorf("output lacks %q:\n%s", line, out)
		}
	}
}

func TestWriterRefusesMisuse(t *testing.T) {
	for name, fn := range map[string]func(w *metrics.Writer){
		"counter without _total": func(w *metrics.Writer) { w.Counter("app_requests", "x", 1) },
		"family twice":           func(w *metrics.Writer) { w.Gauge("a", "x", 1); w.Gauge("b", "x", 1); w.Gauge("a", "x", 2) },
		"sample before family":   func(w *metrics.Writer) { w.Int(nil, 1) },
		"bad metric name":        func(w *metrics.Writer) { w.Gauge("1abc", "x", 1) },
		"bad label name":         func(w *metrics.Writer) { w.Family("a", metrics.TypeGauge, "x"); w.Int(metrics.Labels{"a-b", "v"}, 1) },
		"odd labels":             func(w *metrics.Writer) { w.Family("a", metrics.TypeGauge, "x"); w.Int(metrics.Labels{"a"}, 1) },
		"le in a histogram": func(w *metrics.Writer) {
			w.Family("h", metrics.TypeHistogram, "x")
			w.Histogram(metrics.Labels{"le", "1"}, metrics.NewHistogram(nil).Snapshot())
		},
		"scalar in a histogram": func(w *metrics.Writer) { w.Family("h", metrics.TypeHistogram, "x"); w.Int(nil, 1) },
		"histogram in a gauge": func(w *metrics.Writer) {
			w.Family("g", metrics.TypeGauge, "x")
			w.Histogram(nil, metrics.NewHistogram(nil).Snapshot())
		},
	} {
		var b strings.Builder
		w := metrics.NewWriter(&b)
		fn(w)
		if err := w.Flush(); err == nil {
			t.Errorf("%s: no error; wrote:\n%s", name, b.String())
		}
	}
}
