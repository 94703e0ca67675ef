package cli

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	ucli "github.com/urfave/cli/v2"

	"paymentlog/client"
)

// topicDescribeProducersCommand is `paymentlog topic describe-producers NAME
// [--partition P] [--broker-id B]` (Kafka's kafka-transactions.sh
// describe-producers): the idempotent producers each partition's leader,
// or one broker's replicas, remember.
func topicDescribeProducersCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "describe-producers",
		Usage: "show the idempotent producers a partition's leader (or a chosen broker's replica) remembers",
		UsageText: "paymentlog topic describe-producers NAME [--partition P] [--broker-id B] [--json]\n\n" +
			"For each producer id: its epoch, the last sequence number it wrote (its next batch must start\n" +
			"right after it, else OutOfOrderSequence), when it was last seen, the offsets of its last batch,\n" +
			"how many of its batches are remembered to answer retries as duplicates (at most 5), and how long\n" +
			"until the replica forgets it if it sends nothing more (--producer-id-expiration; then a batch\n" +
			"other than its sequence 0 is UnknownProducerID; \"-\": not while it has a batch above the high\n" +
			"watermark). Each partition's leader answers; with --broker-id, that broker answers for its own\n" +
			"replicas, leader or follower (a follower rebuilds the same state from its copy of the log).\n" +
			"Exit status 1, naming the first, if a partition could not be described (no leader, no replica\n" +
			"on the broker, or a producer state that could not be rebuilt after a failed truncation).",
		Flags: withFlags(clientFlags(), []ucli.Flag{
			&ucli.IntFlag{Name: "partition", Value: -1, Usage: "only this partition (-1: every partition)", EnvVars: envVar("TOPIC_DESCRIBE_PRODUCERS_PARTITION")},
			&ucli.IntFlag{Name: "broker-id", Usage: "ask this broker's replicas instead of the leaders (0: the leaders)", EnvVars: envVar("TOPIC_DESCRIBE_PRODUCERS_BROKER_ID")},
			&ucli.BoolFlag{Name: "json", Usage: "print JSON", EnvVars: envVar("TOPIC_JSON")},
			timeoutFlag("TOPIC_TIMEOUT", defaultAdminTimeout),
		}),
		Action: func(c *ucli.Context) error {
			name, err := oneArg(c, "topic name")
			if err != nil {
				return err
			}
			co, err := parseClientOptions(c)
			if err != nil {
				return usageError("%v", err)
			}
			var opts client.DescribeProducersOptions
			switch p := c.Int("partition"); {
			case p >= 0:
				opts.Partitions = []int32{int32(p)}
			case p != -1:
				return usageError("--partition: %d is not a partition (-1: every partition)", p)
			}
			if opts.Broker = int32(c.Int("broker-id")); opts.Broker < 0 {
				return usageError("--broker-id: %d is not a broker id (0: the leaders)", opts.Broker)
			}
			return runTopicDescribeProducers(c.Context, co, name, opts, c.Bool("json"), c.Duration("timeout"), c.App.Writer, c.App.ErrWriter)
		},
	}
}

// topicProducersJSON is `topic describe-producers --json`.
type topicProducersJSON struct {
	Topic      string                      `json:"topic"`
	Partitions []client.PartitionProducers `json:"partitions"`
}

func runTopicDescribeProducers(ctx context.Context, co clientOptions, name string, opts client.DescribeProducersOptions, asJSON bool, timeout time.Duration, stdout, stderr io.Writer) error {
	return withAdmin(ctx, co, timeout, stderr, func(ctx context.Context, a *client.Admin) error {
		parts, err := a.DescribeProducers(ctx, name, opts)
		if err != nil {
			return fmt.Errorf("topic describe-producers %s: %w", name, err)
		}
		if asJSON {
			err = printJSON(stdout, topicProducersJSON{Topic: name, Partitions: parts})
		} else {
			err = printProducers(stdout, parts)
		}
		if err != nil {
			return err
		}
		failed := 0
		var first client.PartitionProducers
		for _, p := range parts {
			if p.Err != nil {
				if failed == 0 {
					first = p
				}
				failed++
			}
		}
		if failed > 0 {
			return fmt.Errorf("topic describe-producers %s: %d of %d partitions not described (partition %d: %v)", name, failed, len(parts), first.Partition, first.Err)
		}
		return nil
	})
}

// printProducers prints one row per producer of each partition described.
func printProducers(w io.Writer, parts []client.PartitionProducers) error {
	rows := 0
	for _, p := range parts {
		rows += len(p.Producers)
	}
	if rows == 0 {
		_, err := fmt.Fprintf(w, "no idempotent producers on the %d partitions described\n", countDescribed(parts))
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tBROKER\tPRODUCER ID\tEPOCH\tLAST SEQUENCE\tLAST SEEN\tLAST BATCH\tBATCHES\tEXPIRES IN")
	for _, p := range parts {
		role := "follower"
		if p.Leader {
			role = "leader"
		}
		for _, s := range p.Producers {
			seen := "unknown"
			if s.LastTimestamp >= 0 {
				seen = time.UnixMilli(s.LastTimestamp).UTC().Format("2006-01-02T15:04:05.000Z")
			}
			expires := "-"
			if s.ExpiresInMs >= 0 {
				expires = (time.Duration(s.ExpiresInMs) * time.Millisecond).Round(time.Second).String()
			}
			fmt.Fprintf(tw, "%d\t%d (%s)\t%d\t%d\t%d\t%s\t%d-%d\t%d\t%s\n", p.Partition, p.Broker, role, s.ProducerID, s.ProducerEpoch,
				s.LastSequence, seen, s.FirstOffset, s.LastOffset, s.Batches, expires)
		}
		if p.Omitted > 0 {
			fmt.Fprintf(tw, "%d\t%d (%s)\t(%d more not listed)\t\t\t\t\t\t\n", p.Partition, p.Broker, role, p.Omitted)
		}
	}
	return tw.Flush()
}

// countDescribed counts the partitions described without an error.
func countDescribed(parts []client.PartitionProducers) int {
	n := 0
	for _, p := range parts {
		if p.Err == nil {
			n++
		}
	}
	return n
}
