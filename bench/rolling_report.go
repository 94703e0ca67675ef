package bench

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// writeRolling prints the rolling restart benchmark's part of the summary:
// one row per restart, then p50 and max of each figure over the restarts.
func writeRolling(w io.Writer, ro *RollingResult) {
	fmt.Fprintf(w, "\nROLLING RESTART\t%d round(s), %d of %d restarts, acks=all at %d records/s over %d partitions (min ISR %d); each node: /safe-to-stop, SIGTERM (controlled shutdown), start, /readyz; the active controller last\n",
		ro.Rounds, len(ro.Restarts), ro.Planned, ro.Rate, ro.Partitions, ro.MinISR)
	fmt.Fprintf(w, "  restart\tsafe-to-stop wait\tshutdown\tready\tunavailable (partition, ended at)\tmax produce latency\tproduce errors\tbelow min ISR\tleader changes\n")
	for i, rs := range ro.Restarts {
		ctrl := ""
		if rs.WasController {
			ctrl = " (controller)"
		}
		part := ""
		if rs.UnavailablePartition >= 0 {
			part = fmt.Sprintf(" (p%d, +%.0f ms)", rs.UnavailablePartition, rs.UnavailableEndMs)
		}
		fmt.Fprintf(w, "  %d: round %d node %d%s\t%s (%d refusals)\t%s\t%s\t%s%s\t%s\t%s\t%s\t%d\n",
			i+1, rs.Round, rs.Node, ctrl, msOrNone(rs.SafeToStopWaitMs), rs.SafeToStopRefusals, msOrNone(rs.ShutdownMs), msOrNone(rs.ReadyMs),
			msOrNone(rs.UnavailableMs), part, msOrNone(rs.MaxProduceLatencyMs), causesString(rs.ProduceErrors), msOrNone(rs.BelowMinISRMs), rs.Changes.LeaderChanges)
	}
	pm := func(s Summary) string {
		if s.N == 0 {
			return "none measured"
		}
		m := ""
		if s.Missing > 0 {
			m = fmt.Sprintf("; %d restart(s) without a figure", s.Missing)
		}
		return fmt.Sprintf("p50 %.0f  max %.0f ms  (n=%d%s)", s.P50, s.Max, s.N, m)
	}
	fmt.Fprintf(w, "  before the first restart (%.1fs)\tlongest gap between acks of a partition %.0f ms, max produce latency %.0f ms\n", ro.BaselineMs/1000, ro.BaselineGapMs, ro.BaselineMaxLatencyMs)
	fmt.Fprintf(w, "  safe-to-stop wait\t%s\n", pm(ro.SafeToStopWaitMs))
	fmt.Fprintf(w, "  controlled shutdown\t%s\n", pm(ro.ShutdownMs))
	fmt.Fprintf(w, "  start → ready\t%s\n", pm(ro.ReadyMs))
	fmt.Fprintf(w, "  unavailability (longest gap between acks of a partition)\t%s\n", pm(ro.UnavailableMs))
	fmt.Fprintf(w, "  max produce latency per restart\t%s\n", pm(ro.MaxProduceLatencyMs))
	fmt.Fprintf(w, "  produce latency (whole run)\tp50 %.2f  p99 %.2f  max %.2f ms\n", ro.ProduceLatency.P50, ro.ProduceLatency.P99, ro.ProduceLatency.Max)
	fmt.Fprintf(w, "  failed produce requests (whole run, retried included)\t%s\n", causesString(ro.ProduceErrors))
	fmt.Fprintf(w, "  below min ISR\t%.0f ms in all\n", ro.BelowMinISRMs)
	fmt.Fprintf(w, "  records\t%d acknowledged, %d verified, %d lost, %d unverified, %d duplicates, %d failed deliveries\n",
		ro.Acked, ro.Verified, ro.LostRecords, ro.Unverified, ro.Duplicates, ro.Failed)
	for _, e := range ro.LostExamples {
		fmt.Fprintf(w, "  lost\t%s\n", e)
	}
	for _, e := range ro.DuplicateExamples {
		fmt.Fprintf(w, "  duplicate\t%s\n", e)
	}
	for i, rs := range ro.Restarts {
		if rs.Error != "" {
			fmt.Fprintf(w, "  restart %d (node %d)\t%s\n", i+1, rs.Node, rs.Error)
		}
	}
	if ro.FirstError != "" {
		fmt.Fprintf(w, "  first error\t%s\n", ro.FirstError)
	}
}

// msOrNone formats a figure in ms, "-" for one not measured (< 0).
func msOrNone(v float64) string {
	if v < 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f ms", v)
}

// causesString lists counts by cause, largest first ("0" for none).
func causesString(m map[string]uint64) string {
	if len(m) == 0 {
		return "0"
	}
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int {
		if m[a] != m[b] {
			return int(m[b]) - int(m[a])
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
