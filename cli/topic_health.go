package cli

import (
	"strings"

	"paymentlog/client"

	ucli "github.com/urfave/cli/v2"
)

// Partition health filters of `topic describe` (Kafka's kafka-topics
// --under-replicated-partitions, --under-min-isr-partitions,
// --at-min-isr-partitions and --unavailable-partitions): with one, describe lists only the partitions
// it matches, across every topic when no NAME is given.

// healthFilter selects partitions; nil selects all.
type healthFilter func(p client.PartitionInfo, minISR int32) bool

var healthFilters = []struct {
	flag, usage string
	match       healthFilter
}{
	{"under-replicated", "only partitions whose ISR lacks a replica",
		func(p client.PartitionInfo, _ int32) bool { return len(p.ISR) < len(p.Replicas)-len(p.AddingReplicas) }},
	{"under-min-isr", "only partitions whose ISR is below the topic's min ISR (acks=all writes are refused)",
		func(p client.PartitionInfo, minISR int32) bool { return int32(len(p.ISR)) < minISR }},
	{"at-min-isr", "only partitions whose ISR is at the topic's min ISR (one more replica lost and acks=all writes are refused: not a time to stop a node)",
		func(p client.PartitionInfo, minISR int32) bool { return int32(len(p.ISR)) == minISR }},
	{"unavailable", "only partitions without a leader (offline)",
		func(p client.PartitionInfo, _ int32) bool { return p.Leader < 0 }},
}

func healthFlags() []ucli.Flag {
	var out []ucli.Flag
	for _, f := range healthFilters {
		out = append(out, &ucli.BoolFlag{Name: f.flag, Usage: f.usage, EnvVars: envVar("TOPIC_" + strings.ToUpper(strings.ReplaceAll(f.flag, "-", "_")))})
	}
	return out
}

// parseHealthFilter returns the filter the flags ask for (at most one).
func parseHealthFilter(c *ucli.Context) (healthFilter, error) {
	var match healthFilter
	set := ""
	for _, f := range healthFilters {
		if !c.Bool(f.flag) {
			continue
		}
		if set != "" {
			return nil, usageError("--%s and --%s: give one partition filter at a time", set, f.flag)
		}
		set, match = f.flag, f.match
	}
	return match, nil
}

// filterPartitions keeps d's partitions that match (all when match is nil).
func filterPartitions(d client.TopicDescription, match healthFilter) client.TopicDescription {
	if match == nil {
		return d
	}
	kept := make([]client.PartitionInfo, 0, len(d.Partitions))
	for _, p := range d.Partitions {
		if match(p, d.MinISR) {
			kept = append(kept, p)
		}
	}
	d.Partitions = kept
	return d
}
