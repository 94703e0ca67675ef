// Package promtest parses the Prometheus text exposition format (0.0.4)
// strictly, for tests: it is what a scraper would accept, and more. Parse
// fails unless every sample belongs to a family declared before it with
// # TYPE, each family's samples come together, HELP and TYPE come at most
// once per family, counters end in _total and are not negative, no sample
// repeats, and every histogram has buckets with ascending bounds and
// non-decreasing (cumulative) counts ending with le="+Inf" equal to its
// _count, and a _sum.
package promtest

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Family is one declared metric family.
type Family struct {
	Name, Type, Help string
	Samples          []Sample
}

// Sample is one sample line.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Exposition is a parsed /metrics body.
type Exposition struct {
	Families map[string]*Family
}

// maxLine bounds one line (a scrape of ours is far below).
const maxLine = 1 << 20

// Parse reads and checks an exposition.
func Parse(r io.Reader) (*Exposition, error) {
	e := &Exposition{Families: map[string]*Family{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	var cur *Family           // the family whose samples may follow
	done := map[string]bool{} // families closed by a later one
	seen := map[string]bool{} // sample name + labels
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if err := e.line(line, &cur, done, seen); err != nil {
			return nil, fmt.Errorf("line %d %q: %w", n, line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for _, f := range e.Families {
		if f.Type == "" {
			return nil, fmt.Errorf("family %s has HELP but no TYPE", f.Name)
		}
		if f.Type == "histogram" {
			if err := checkHistogram(f); err != nil {
				return nil, err
			}
		}
	}
	return e, nil
}

func (e *Exposition) line(line string, cur **Family, done, seen map[string]bool) error {
	if strings.TrimSpace(line) == "" {
		return nil
	}
	if rest, ok := strings.CutPrefix(line, "#"); ok {
		fields := strings.SplitN(strings.TrimLeft(rest, " \t"), " ", 3)
		if len(fields) < 2 || (fields[0] != "HELP" && fields[0] != "TYPE") {
			return nil // a comment
		}
		name := fields[1]
		if !validName(name) {
			return fmt.Errorf("bad metric name %q", name)
		}
		f := e.Families[name]
		if f == nil {
			if *cur != nil && (*cur).Name != name {
				done[(*cur).Name] = true
			}
			f = &Family{Name: name}
			e.Families[name] = f
		} else if done[name] || len(f.Samples) > 0 {
			return fmt.Errorf("%s %s after its samples or another family", fields[0], name)
		}
		*cur = f
		arg := ""
		if len(fields) == 3 {
			arg = fields[2]
		}
		if fields[0] == "HELP" {
			if f.Help != "" {
				return fmt.Errorf("second HELP for %s", name)
			}
			h, err := unescape(arg, false)
			if err != nil {
				return err
			}
			f.Help = h
			if f.Help == "" {
				f.Help = " " // declared, if empty
			}
			return nil
		}
		if f.Type != "" {
			return fmt.Errorf("second TYPE for %s", name)
		}
		switch arg {
		case "counter", "gauge", "histogram", "summary", "untyped":
		default:
			return fmt.Errorf("unknown type %q", arg)
		}
		if arg == "counter" && !strings.HasSuffix(name, "_total") {
			return fmt.Errorf("counter %s does not end in _total", name)
		}
		f.Type = arg
		return nil
	}
	s, err := parseSample(line)
	if err != nil {
		return err
	}
	f := *cur
	if f == nil || f.Type == "" || !belongs(f, s.Name) {
		return fmt.Errorf("sample %s outside its family's TYPE block (declared families: %d)", s.Name, len(e.Families))
	}
	if f.Type == "counter" && !(s.Value >= 0) {
		return fmt.Errorf("counter %s is %v", s.Name, s.Value)
	}
	if f.Type == "histogram" && strings.HasSuffix(s.Name, "_bucket") {
		if _, ok := s.Labels["le"]; !ok {
			return fmt.Errorf("bucket without le")
		}
	}
	key := s.Name + "{" + labelKey(s.Labels, "") + "}"
	if seen[key] {
		return fmt.Errorf("sample %s repeated", key)
	}
	seen[key] = true
	f.Samples = append(f.Samples, s)
	return nil
}

// belongs says whether a sample named name is one of f's.
func belongs(f *Family, name string) bool {
	if f.Type == "histogram" {
		return name == f.Name+"_bucket" || name == f.Name+"_sum" || name == f.Name+"_count"
	}
	if f.Type == "summary" {
		return name == f.Name || name == f.Name+"_sum" || name == f.Name+"_count"
	}
	return name == f.Name
}

// parseSample parses name{l="v",...} value [timestamp].
func parseSample(line string) (Sample, error) {
	s := Sample{Labels: map[string]string{}}
	i := 0
	for i < len(line) && line[i] != '{' && line[i] != ' ' && line[i] != '\t' {
		i++
	}
	s.Name = line[:i]
	if !validName(s.Name) {
		return s, fmt.Errorf("bad metric name %q", s.Name)
	}
	rest := line[i:]
	if strings.HasPrefix(rest, "{") {
		rest = rest[1:]
		for {
			rest = strings.TrimLeft(rest, " ")
			if strings.HasPrefix(rest, "}") {
				rest = rest[1:]
				break
			}
			eq := strings.IndexByte(rest, '=')
			if eq <= 0 {
				return s, fmt.Errorf("bad label list")
			}
			ln := strings.TrimSpace(rest[:eq])
			if !validName(ln) || strings.Contains(ln, ":") {
				return s, fmt.Errorf("bad label name %q", ln)
			}
			rest = strings.TrimLeft(rest[eq+1:], " ")
			if !strings.HasPrefix(rest, `"`) {
				return s, fmt.Errorf("label %s value not quoted", ln)
			}
			end := closingQuote(rest)
			if end < 0 {
				return s, fmt.Errorf("label %s value not closed", ln)
			}
			v, err := unescape(rest[1:end], true)
			if err != nil {
				return s, err
			}
			if _, dup := s.Labels[ln]; dup {
				return s, fmt.Errorf("label %s repeated", ln)
			}
			s.Labels[ln] = v
			rest = strings.TrimLeft(rest[end+1:], " ")
			if strings.HasPrefix(rest, ",") {
				rest = rest[1:]
			} else if !strings.HasPrefix(rest, "}") {
				return s, fmt.Errorf("expected , or } after label %s", ln)
			}
		}
	}
	fields := strings.Fields(rest)
	if len(fields) < 1 || len(fields) > 2 || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
		return s, fmt.Errorf("want one value and an optional timestamp")
	}
	v, err := parseValue(fields[0])
	if err != nil {
		return s, err
	}
	s.Value = v
	if len(fields) == 2 {
		if _, err := strconv.ParseInt(fields[1], 10, 64); err != nil {
			return s, fmt.Errorf("bad timestamp %q", fields[1])
		}
	}
	return s, nil
}

func parseValue(s string) (float64, error) {
	switch s {
	case "+Inf":
		return math.Inf(1), nil
	case "-Inf":
		return math.Inf(-1), nil
	case "NaN":
		return math.NaN(), nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("bad value %q", s)
	}
	return v, nil
}

// closingQuote returns the index of the quote closing s (which starts with
// one), skipping escaped characters; -1 if none.
func closingQuote(s string) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// unescape undoes \\ and \n, and \" in label values; any other escape is an error.
func unescape(s string, quoted bool) (string, error) {
	if !strings.Contains(s, `\`) {
		if quoted && strings.ContainsAny(s, "\"\n") || strings.Contains(s, "\n") {
			return "", fmt.Errorf("unescaped quote or newline")
		}
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			if quoted && c == '"' {
				return "", fmt.Errorf("unescaped quote")
			}
			b.WriteByte(c)
			continue
		}
		if i+1 == len(s) {
			return "", fmt.Errorf("dangling backslash")
		}
		i++
		switch s[i] {
		case '\\':
			b.WriteByte('\\')
		case 'n':
			b.WriteByte('\n')
		case '"':
			if !quoted {
				b.WriteString(`\"`)
				continue
			}
			b.WriteByte('"')
		default:
			if !quoted {
				b.WriteByte('\\')
				b.WriteByte(s[i])
				continue
			}
			return "", fmt.Errorf("bad escape \\%c", s[i])
		}
	}
	return b.String(), nil
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9')) {
			return false
		}
	}
	return true
}

// labelKey renders labels but skip in a canonical order.
func labelKey(labels map[string]string, skip string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		if k != skip {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%q,", k, labels[k])
	}
	return b.String()
}

// checkHistogram checks each of f's histograms (one per label set).
func checkHistogram(f *Family) error {
	type bucket struct {
		le    float64
		count float64
	}
	type hist struct {
		buckets          []bucket
		sum, count       float64
		hasSum, hasCount bool
	}
	hs := map[string]*hist{}
	get := func(k string) *hist {
		if hs[k] == nil {
			hs[k] = &hist{}
		}
		return hs[k]
	}
	for _, s := range f.Samples {
		h := get(labelKey(s.Labels, "le"))
		switch s.Name {
		case f.Name + "_bucket":
			le, err := parseValue(s.Labels["le"])
			if err != nil {
				return fmt.Errorf("%s: bad le %q", f.Name, s.Labels["le"])
			}
			h.buckets = append(h.buckets, bucket{le, s.Value})
		case f.Name + "_sum":
			h.sum, h.hasSum = s.Value, true
		case f.Name + "_count":
			h.count, h.hasCount = s.Value, true
		}
	}
	for k, h := range hs {
		if !h.hasSum || !h.hasCount || len(h.buckets) == 0 {
			return fmt.Errorf("%s{%s}: missing _sum, _count or buckets", f.Name, k)
		}
		if !slices.IsSortedFunc(h.buckets, func(a, b bucket) int { return cmp.Compare(a.le, b.le) }) {
			return fmt.Errorf("%s{%s}: bucket bounds out of order", f.Name, k)
		}
		for i := 1; i < len(h.buckets); i++ {
			if h.buckets[i].le == h.buckets[i-1].le {
				return fmt.Errorf("%s{%s}: bucket le=%v repeated", f.Name, k, h.buckets[i].le)
			}
			if h.buckets[i].count < h.buckets[i-1].count {
				return fmt.Errorf("%s{%s}: buckets not cumulative at le=%v", f.Name, k, h.buckets[i].le)
			}
		}
		last := h.buckets[len(h.buckets)-1]
		if !math.IsInf(last.le, 1) {
			return fmt.Errorf("%s{%s}: last bucket is le=%v, not +Inf", f.Name, k, last.le)
		}
		if last.count != h.count {
			return fmt.Errorf("%s{%s}: +Inf bucket %v != _count %v", f.Name, k, last.count, h.count)
		}
		if h.count < 0 || math.IsNaN(h.count) {
			return fmt.Errorf("%s{%s}: _count %v", f.Name, k, h.count)
		}
	}
	return nil
}

// Value returns the sample of family name (a counter or gauge) whose labels
// are exactly the given pairs.
func (e *Exposition) Value(name string, labels ...string) (float64, bool) {
	return e.sample(name, name, labels)
}

// HistogramCount returns the _count of histogram family name with the given labels.
func (e *Exposition) HistogramCount(name string, labels ...string) (float64, bool) {
	return e.sample(name, name+"_count", labels)
}

// Sum adds up every sample of family name (a counter or gauge) whose labels
// include the given pairs.
func (e *Exposition) Sum(name string, labels ...string) float64 {
	f := e.Families[name]
	if f == nil {
		return 0
	}
	var t float64
	for _, s := range f.Samples {
		if s.Name == name && matches(s.Labels, labels, false) {
			t += s.Value
		}
	}
	return t
}

func (e *Exposition) sample(family, name string, labels []string) (float64, bool) {
	f := e.Families[family]
	if f == nil {
		return 0, false
	}
	for _, s := range f.Samples {
		if s.Name == name && matches(s.Labels, labels, true) {
			return s.Value, true
		}
	}
	return 0, false
}

func matches(have map[string]string, want []string, exact bool) bool {
	if exact && len(have) != len(want)/2 {
		return false
	}
	for i := 0; i+1 < len(want); i += 2 {
		if v, ok := have[want[i]]; !ok || v != want[i+1] {
			return false
		}
	}
	return true
}
