// Package metrics holds what /metrics needs without a client library: a
// fixed-bucket latency Histogram that is lock-free to observe, and a Writer
// for the Prometheus text exposition format, version 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/):
//
//	# HELP name help text (backslash and newline escaped)
//	# TYPE name counter|gauge|histogram
//	name{label="value",...} value
//
// Every family is declared once, with HELP and TYPE, before its samples,
// and its samples follow together. Counter names end in _total. A histogram
// family NAME writes NAME_bucket{le="..."} (cumulative, ending with
// le="+Inf"), NAME_sum and NAME_count. Label values escape backslash,
// double quote and newline. Integer values are written as integers (scrapers
// in bench/ parse some counters with strconv.ParseUint).
//
// Package metrics/promtest parses the format back, for tests.
package metrics
