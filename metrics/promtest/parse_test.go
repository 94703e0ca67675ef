package promtest

import (
	"strings"
	"testing"
)

const good = `# HELP a_total Things.
# TYPE a_total counter
a_total 3
# A comment.
# TYPE g gauge
g{x="1",y="a\"b\\c\nd"} -2.5
g{x="2"} 1e3 1700000000000
# HELP h_seconds Latency.
# TYPE h_seconds histogram
h_seconds_bucket{op="p",le="0.1"} 1
h_seconds_bucket{op="p",le="1"} 2
h_seconds_bucket{op="p",le="+Inf"} 3
h_seconds_sum{op="p"} 9.5
h_seconds_count{op="p"} 3
`

func TestParseGood(t *testing.T) {
	e, err := Parse(strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := e.Value("g", "x", "1", "y", "a\"b\\c\nd"); !ok || v != -2.5 {
		t.Fatalf("g = %v %v", v, ok)
	}
	if v := e.Sum("g"); v != 997.5 {
		t.Fatalf("sum g = %v", v)
	}
	if c, ok := e.HistogramCount("h_seconds", "op", "p"); !ok || c != 3 {
		t.Fatalf("count = %v %v", c, ok)
	}
	if e.Families["a_total"].Help != "Things." {
		t.Fatalf("help %q", e.Families["a_total"].Help)
	}
}

// Each case breaks one rule the parser must catch.
func TestParseRejects(t *testing.T) {
	for name, body := range map[string]string{
		"undeclared sample":     "x 1\n",
		"help without type":     "# HELP x X.\nx 1\n",
		"counter name":          "# TYPE x counter\nx 1\n",
		"negative counter":      "# TYPE x_total counter\nx_total -1\n",
		"second type":           "# TYPE x gauge\n# TYPE x gauge\nx 1\n",
		"second help":           "# HELP x a\n# HELP x b\n# TYPE x gauge\n",
		"type after samples":    "# TYPE x gauge\nx 1\n# TYPE x gauge\n",
		"interleaved families":  "# TYPE x gauge\n# TYPE y gauge\ny 1\nx 1\n",
		"family redeclared":     "# TYPE x gauge\nx 1\n# TYPE y gauge\ny 1\n# HELP x again\n",
		"repeated sample":       "# TYPE x gauge\nx{a=\"1\"} 1\nx{a=\"1\"} 2\n",
		"bad value":             "# TYPE x gauge\nx one\n",
		"unquoted label":        "# TYPE x gauge\nx{a=1} 1\n",
		"unclosed label":        "# TYPE x gauge\nx{a=\"1} 1\n",
		"bad escape":            "# TYPE x gauge\nx{a=\"\\t\"} 1\n",
		"repeated label":        "# TYPE x gauge\nx{a=\"1\",a=\"2\"} 1\n",
		"unknown type":          "# TYPE x meter\n",
		"foreign sample":        "# TYPE x gauge\nx_count 1\n",
		"no inf bucket":         "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n",
		"inf not count":         "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 1\n",
		"not cumulative":        "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"2\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 2\n",
		"bounds out of order":   "# TYPE h histogram\nh_bucket{le=\"2\"} 1\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
		"no sum":                "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_count 1\n",
		"bucket without le":     "# TYPE h histogram\nh_bucket 1\nh_sum 1\nh_count 1\n",
		"trailing garbage":      "# TYPE x gauge\nx 1 2 3\n",
		"label list then value": "# TYPE x gauge\nx{a=\"1\"}1\n",
	} {
		if _, err := Parse(strings.NewReader(body)); err == nil {
			t.Errorf("%s: parsed without error:\n%s", name, body)
		}
	}
}

// FuzzParse: no input panics the parser, and what it accepts satisfies its
// own histogram rule.
func FuzzParse(f *testing.F) {
	f.Add(good)
	f.Add("# TYPE x gauge\nx{a=\"\\\"\"} NaN\n")
	f.Fuzz(func(t *testing.T, body string) {
		e, err := Parse(strings.NewReader(body))
		if err != nil {
			return
		}
		for _, fam := range e.Families {
			if fam.Type == "histogram" {
				if err := checkHistogram(fam); err != nil {
					t.Fatalf("accepted a bad histogram: %v", err)
				}
			}
		}
	})
}
