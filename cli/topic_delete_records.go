package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"time"

	ucli "github.com/urfave/cli/v2"

	"paymentlog/client"
)

// topicDeleteRecordsCommand is `paymentlog topic delete-records NAME
// --offset O [--partition P]` (Kafka's kafka-delete-records): every record
// below the offset goes, from one partition or all of them.
func topicDeleteRecordsCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "delete-records",
		Usage: "delete a partition's records below an offset (or every partition's below its high watermark)",
		UsageText: "paymentlog topic delete-records NAME --offset OFFSET|latest [--partition P] [--wait 10s]\n\n" +
			"Every record below OFFSET goes: the partition's log start moves there, on its leader at once\n" +
			"and on each follower at its next fetch; consumers reading below it go on from it. latest is\n" +
			"the high watermark (everything committed so far). Without --partition, every partition of\n" +
			"the topic (then --offset must be latest). An offset above the high watermark is refused, and\n" +
			"so is a topic whose cleanup.policy is compact alone. Prints each partition's new log start and,\n" +
			"after waiting up to --wait for it (0: not at all), on how many of its in-sync replicas it holds:\n" +
			"exit status 1 if some still hold records below it then.",
		Flags: withFlags(clientFlags(), []ucli.Flag{
			&ucli.StringFlag{Name: "offset", Usage: "delete the records below this offset, or latest (the high watermark)", EnvVars: envVar("TOPIC_DELETE_RECORDS_OFFSET")},
			&ucli.IntFlag{Name: "partition", Value: -1, Usage: "the partition (-1: every partition, with --offset latest)", EnvVars: envVar("TOPIC_DELETE_RECORDS_PARTITION")},
			&ucli.DurationFlag{Name: "wait", Value: 10 * time.Second, Usage: "how long to wait for every in-sync replica to drop the records too (0: do not wait)", EnvVars: envVar("TOPIC_DELETE_RECORDS_WAIT")},
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
			off, err := parseDeleteRecordsOffset(c.String("offset"))
			if err != nil {
				return usageError("--offset: %v", err)
			}
			part := c.Int("partition")
			switch {
			case part < -1:
				return usageError("--partition: %d is not a partition (or -1 for every one)", part)
			case part == -1 && off != client.DeleteRecordsLatest:
				return usageError("--offset %d needs --partition: offsets are a partition's own (every partition takes --offset latest)", off)
			}
			if c.Duration("wait") < 0 {
				return usageError("--wait: %v is negative", c.Duration("wait"))
			}
			return runTopicDeleteRecords(c.Context, co, name, int32(part), off, c.Duration("wait"), c.Duration("timeout"), c.App.Writer, c.App.ErrWriter)
		},
	}
}

// parseDeleteRecordsOffset reads --offset: an offset, or latest.
func parseDeleteRecordsOffset(s string) (int64, error) {
	if s == "latest" {
		return client.DeleteRecordsLatest, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not an offset (0 or more) or latest", s)
	}
	return n, nil
}

func runTopicDeleteRecords(ctx context.Context, co clientOptions, name string, part int32, off int64, wait, timeout time.Duration, stdout, stderr io.Writer) error {
	return withAdmin(ctx, co, timeout, stderr, func(ctx context.Context, a *client.Admin) error {
		var starts map[int32]int64
		var err error
		if part < 0 {
			starts, err = a.DeleteAllRecords(ctx, name, client.LeadersOnly)
		} else {
			starts, err = a.DeleteRecords(ctx, name, map[int32]int64{part: off}, client.LeadersOnly)
		}
		parts := slices.Sorted(maps.Keys(starts))
		if err != nil || wait == 0 {
			for _, p := range parts {
				fmt.Fprintf(stdout, "%s:%d: log start %d\n", name, p, starts[p])
			}
			if err != nil {
				return fmt.Errorf("topic delete-records %s: %w", name, err)
			}
			return nil
		}
		wctx, cancel := context.WithTimeout(ctx, wait)
		isr, behind, werr := a.WaitReplicasLogStart(wctx, name, starts)
		cancel()
		for _, p := range parts {
			if isr == nil {
				fmt.Fprintf(stdout, "%s:%d: log start %d\n", name, p, starts[p])
				continue
			}
			n := len(isr[p])
			fmt.Fprintf(stdout, "%s:%d: log start %d on %d of %d in-sync replicas\n", name, p, starts[p], n-len(behind[p]), n)
		}
		if werr == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("topic delete-records %s: %w", name, ctx.Err())
		}
		for _, p := range parts {
			if len(behind[p]) > 0 {
				return fmt.Errorf("topic delete-records %s: partition %d: in-sync replicas %v still hold records below %d after %v (each drops them at its next fetch from the leader)",
					name, p, behind[p], starts[p], wait)
			}
		}
		return fmt.Errorf("topic delete-records %s: confirming the replicas: %w", name, werr)
	})
}
