package cli

import (
	"fmt"
	"io"
	"text/tabwriter"

	"paymentlog/client"
)

// printReplicaStates prints the per-replica table of `topic describe
// --replicas` (nothing when no partition has replica states).
func printReplicaStates(stdout io.Writer, d client.TopicDescription) error {
	have := false
	for _, p := range d.Partitions {
		have = have || len(p.ReplicaStates) > 0
	}
	if !have {
		return nil
	}
	fmt.Fprintln(stdout)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tREPLICA\tROLE\tIN ISR\tLOG START\tLOG END\tHIGH WATERMARK\tLAG\tSIZE\tSEGMENTS")
	for _, p := range d.Partitions {
		for _, r := range p.ReplicaStates {
			isr := "no"
			if r.InISR {
				isr = "yes"
			}
			if r.Error != "" {
				fmt.Fprintf(tw, "%d\t%d\t-\t%s\t-\t-\t-\t-\t-\t-\tno answer: %s\n", p.Partition, r.Broker, isr, oneLine(r.Error))
				continue
			}
			role := "follower"
			if r.Leader {
				role = "leader"
			}
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%d\n", p.Partition, r.Broker, role, isr,
				r.LogStart, r.LogEnd, unknownIfNeg(r.HW), unknownIfNeg(r.Lag), humanBytes(r.Size), r.Segments)
		}
	}
	return tw.Flush()
}

// humanBytes prints n bytes in binary units (1.5 MiB).
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
