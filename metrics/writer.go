package metrics

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Type is a metric family's type in the exposition format.
type Type string

const (
	TypeCounter   Type = "counter"
	TypeGauge     Type = "gauge"
	TypeHistogram Type = "histogram"
)

// Labels are a sample's label pairs: name, value, name, value...
type Labels []string

// Writer writes the text exposition format (see the package doc). Declare a
// family with Family, then write its samples; the next Family ends it. The
// first misuse (a family declared twice, a counter without _total, a bad
// name, a sample of the wrong kind or before any family) is kept and
// returned by Flush, and nothing more is written.
type Writer struct {
	w    *bufio.Writer
	err  error
	name string // the current family
	typ  Type
	seen map[string]bool
	buf  []byte
}

// NewWriter writes to w; call Flush at the end.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: bufio.NewWriter(w), seen: map[string]bool{}}
}

// ContentType is the Content-Type of the format.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Family declares the family name with its type and help text.
func (w *Writer) Family(name string, typ Type, help string) {
	if w.err != nil {
		return
	}
	switch {
	case !validName(name, true):
		w.err = fmt.Errorf("metrics: bad metric name %q", name)
	case w.seen[name]:
		w.err = fmt.Errorf("metrics: family %s declared twice", name)
	case typ == TypeCounter && !strings.HasSuffix(name, "_total"):
		w.err = fmt.Errorf("metrics: counter %s does not end in _total", name)
	case typ != TypeCounter && typ != TypeGauge && typ != TypeHistogram:
		w.err = fmt.Errorf("metrics: family %s has unknown type %q", name, typ)
	}
	if w.err != nil {
		return
	}
	w.seen[name], w.name, w.typ = true, name, typ
	w.buf = append(w.buf[:0], "# HELP "...)
	w.buf = append(w.buf, name...)
	w.buf = append(w.buf, ' ')
	w.buf = appendEscaped(w.buf, help, false)
	w.buf = append(w.buf, "\n# TYPE "...)
	w.buf = append(w.buf, name...)
	w.buf = append(w.buf, ' ')
	w.buf = append(w.buf, typ...)
	w.buf = append(w.buf, '\n')
	w.write()
}

// Int writes a sample of the current counter or gauge family.
func (w *Writer) Int(labels Labels, v int64) {
	w.scalar(labels, strconv.AppendInt(nil, v, 10))
}

// Uint writes a sample of the current counter or gauge family.
func (w *Writer) Uint(labels Labels, v uint64) {
	w.scalar(labels, strconv.AppendUint(nil, v, 10))
}

// Float writes a sample of the current counter or gauge family.
func (w *Writer) Float(labels Labels, v float64) {
	w.scalar(labels, appendFloat(nil, v))
}

func (w *Writer) scalar(labels Labels, val []byte) {
	if w.err == nil && (w.name == "" || w.typ == TypeHistogram) {
		w.err = fmt.Errorf("metrics: scalar sample outside a counter or gauge family (in %q)", w.name)
	}
	w.sample(w.name, labels, "", "", val)
}

// Histogram writes one histogram of the current histogram family, in
// seconds: NAME_bucket per bound and +Inf, NAME_sum, NAME_count.
func (w *Writer) Histogram(labels Labels, s HistogramSnapshot) {
	if w.err == nil && w.typ != TypeHistogram {
		w.err = fmt.Errorf("metrics: histogram sample in %s family %q", w.typ, w.name)
	}
	if w.err == nil && len(s.Cumulative) != len(s.Bounds)+1 {
		w.err = fmt.Errorf("metrics: %s: histogram snapshot with %d bounds and %d counts", w.name, len(s.Bounds), len(s.Cumulative))
	}
	for i, c := range s.Cumulative {
		le := "+Inf"
		if i < len(s.Bounds) {
			le = string(appendFloat(nil, s.Bounds[i].Seconds()))
		}
		w.sample(w.name+"_bucket", labels, "le", le, strconv.AppendUint(nil, c, 10))
	}
	w.sample(w.name+"_sum", labels, "", "", appendFloat(nil, s.Sum.Seconds()))
	w.sample(w.name+"_count", labels, "", "", strconv.AppendUint(nil, s.Count, 10))
}

// sample writes name{labels,extra="extraV"} val.
func (w *Writer) sample(name string, labels Labels, extra, extraV string, val []byte) {
	if w.err != nil {
		return
	}
	if len(labels)%2 != 0 {
		w.err = fmt.Errorf("metrics: %s: odd label list %q", name, labels)
		return
	}
	b := append(w.buf[:0], name...)
	if len(labels) > 0 || extra != "" {
		b = append(b, '{')
		for i := 0; i < len(labels); i += 2 {
			if !validName(labels[i], false) || labels[i] == "le" && w.typ == TypeHistogram {
				w.err = fmt.Errorf("metrics: %s: bad label name %q", name, labels[i])
				return
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, labels[i]...)
			b = append(b, `="`...)
			b = appendEscaped(b, labels[i+1], true)
			b = append(b, '"')
		}
		if extra != "" {
			if len(labels) > 0 {
				b = append(b, ',')
			}
			b = append(b, extra...)
			b = append(b, `="`...)
			b = append(b, extraV...)
			b = append(b, '"')
		}
		b = append(b, '}')
	}
	b = append(b, ' ')
	b = append(b, val...)
	b = append(b, '\n')
	w.buf = b
	w.write()
}

func (w *Writer) write() {
	if _, err := w.w.Write(w.buf); err != nil && w.err == nil {
		w.err = err
	}
}

// Flush writes out what is buffered and returns the first error.
func (w *Writer) Flush() error {
	if err := w.w.Flush(); err != nil && w.err == nil {
		w.err = err
	}
	return w.err
}

// Gauge declares a gauge family with one unlabelled sample.
func (w *Writer) Gauge(name, help string, v int64) {
	w.Family(name, TypeGauge, help)
	w.Int(nil, v)
}

// Counter declares a counter family with one unlabelled sample.
func (w *Writer) Counter(name, help string, v uint64) {
	w.Family(name, TypeCounter, help)
	w.Uint(nil, v)
}

// appendEscaped escapes backslash and newline, and double quote in a label
// value (quoted).
func appendEscaped(b []byte, s string, quoted bool) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, `\\`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '"' && quoted:
			b = append(b, `\"`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

func appendFloat(b []byte, v float64) []byte {
	switch {
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	case math.IsNaN(v):
		return append(b, "NaN"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// validName checks a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*) or, without
// colons, a label name (names starting with __ are reserved).
func validName(s string, metric bool) bool {
	if s == "" || (!metric && strings.HasPrefix(s, "__")) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9') ||
			(metric && c == ':')
		if !ok {
			return false
		}
	}
	return true
}
