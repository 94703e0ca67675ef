package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
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
		UsageText: "paymentlog topic delete-records NAME --offset OFFSET|latest [--partition P] [--wait 10s]\n" +
			"   paymentlog topic delete-records --offset-json-file FILE [--wait 10s]\n\n" +
			"Every record below OFFSET goes: the partition's log start moves there, on its leader at once\n" +
			"and on each follower at its next fetch; consumers reading below it go on from it. latest is\n" +
			"the high watermark (everything committed so far). Without --partition, every partition of\n" +
			"the topic (then --offset must be latest). An offset above the high watermark is refused, and\n" +
			"so is a topic whose cleanup.policy is compact alone. Prints each partition's new log start and,\n" +
			"after waiting up to --wait for it (0: not at all), on how many of its in-sync replicas it holds:\n" +
			"exit status 1 if some still hold records below it then. --offset-json-file takes Kafka's\n" +
			"kafka-delete-records file, {\"version\":1,\"partitions\":[{\"topic\":T,\"partition\":P,\"offset\":O}]}\n" +
			"(offset -1: the high watermark), for any number of topics and partitions (- for stdin); a topic\n" +
			"that fails does not stop the others, and the error names every one that did.",
		Flags: withFlags(clientFlags(), []ucli.Flag{
			&ucli.StringFlag{Name: "offset", Usage: "delete the records below this offset, or latest (the high watermark)", EnvVars: envVar("TOPIC_DELETE_RECORDS_OFFSET")},
			&ucli.IntFlag{Name: "partition", Value: -1, Usage: "the partition (-1: every partition, with --offset latest)", EnvVars: envVar("TOPIC_DELETE_RECORDS_PARTITION")},
			&ucli.StringFlag{Name: "offset-json-file", Usage: "delete what `FILE` lists (Kafka's kafka-delete-records JSON; - for stdin)", EnvVars: envVar("TOPIC_DELETE_RECORDS_OFFSET_JSON_FILE")},
			&ucli.DurationFlag{Name: "wait", Value: 10 * time.Second, Usage: "how long to wait for every in-sync replica to drop the records too (0: do not wait)", EnvVars: envVar("TOPIC_DELETE_RECORDS_WAIT")},
			timeoutFlag("TOPIC_TIMEOUT", defaultAdminTimeout),
		}),
		Action: func(c *ucli.Context) error {
			if c.Duration("wait") < 0 {
				return usageError("--wait: %v is negative", c.Duration("wait"))
			}
			if c.IsSet("offset-json-file") {
				return deleteRecordsFromFile(c)
			}
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
			job := deleteRecordsTopic{topic: name, offsets: map[int32]int64{int32(part): off}}
			if part < 0 {
				job.offsets = nil // every partition
			}
			return runTopicDeleteRecords(c.Context, co, []deleteRecordsTopic{job}, c.Duration("wait"), c.Duration("timeout"), c.App.Writer, c.App.ErrWriter)
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

// deleteRecordsFromFile is delete-records --offset-json-file.
func deleteRecordsFromFile(c *ucli.Context) error {
	switch {
	case c.NArg() > 0:
		return usageError("--offset-json-file names the topics: give no topic name (got %s)", strings.Join(c.Args().Slice(), " "))
	case c.IsSet("offset") || c.IsSet("partition"):
		return usageError("--offset and --partition do not go with --offset-json-file: the file gives them")
	}
	co, err := parseClientOptions(c)
	if err != nil {
		return usageError("%v", err)
	}
	name := c.String("offset-json-file")
	var data []byte
	if name == "-" {
		data, err = io.ReadAll(io.LimitReader(c.App.Reader, maxPlanBytes+1))
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return usageError("--offset-json-file: %v", err)
	}
	jobs, err := parseDeleteRecordsFile(data)
	if err != nil {
		return usageError("--offset-json-file %s: %v", name, err)
	}
	return runTopicDeleteRecords(c.Context, co, jobs, c.Duration("wait"), c.Duration("timeout"), c.App.Writer, c.App.ErrWriter)
}

// runTopicDeleteRecords deletes each job's records (nil offsets: every
// partition's below its high watermark), one topic after the other, and
// returns one error naming every topic that failed.
func runTopicDeleteRecords(ctx context.Context, co clientOptions, jobs []deleteRecordsTopic, wait, timeout time.Duration, stdout, stderr io.Writer) error {
	return withAdmin(ctx, co, timeout, stderr, func(ctx context.Context, a *client.Admin) error {
		if err := checkDeleteRecordsJobs(ctx, a, jobs); err != nil {
			return err
		}
		var failed []error
		for _, j := range jobs {
			if err := deleteTopicRecords(ctx, a, j, wait, stdout); err != nil {
				failed = append(failed, err)
			}
		}
		switch len(failed) {
		case 0:
			return nil
		case 1:
			return failed[0]
		}
		msgs := make([]string, len(failed))
		for i, err := range failed {
			msgs[i] = err.Error()
		}
		return fmt.Errorf("%d of %d topics failed: %s", len(failed), len(jobs), strings.Join(msgs, "; "))
	})
}

// checkDeleteRecordsJobs checks, before anything is deleted, that every
// topic exists and has the partitions named (an unknown topic would
// otherwise be retried until the timeout, as one being created is),
// returning one error naming every problem.
func checkDeleteRecordsJobs(ctx context.Context, a *client.Admin, jobs []deleteRecordsTopic) error {
	var bad []string
	for _, j := range jobs {
		n, err := a.PartitionCount(ctx, j.topic)
		if err != nil {
			bad = append(bad, fmt.Sprintf("topic %s: %v", j.topic, err))
			continue
		}
		for _, p := range slices.Sorted(maps.Keys(j.offsets)) {
			if int(p) >= n {
				bad = append(bad, fmt.Sprintf("topic %s has %d partitions; no partition %d", j.topic, n, p))
			}
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("topic delete-records: nothing deleted: %s", strings.Join(bad, "; "))
}

// deleteTopicRecords is one topic of runTopicDeleteRecords.
func deleteTopicRecords(ctx context.Context, a *client.Admin, j deleteRecordsTopic, wait time.Duration, stdout io.Writer) error {
	name := j.topic
	var starts map[int32]int64
	var err error
	if j.offsets == nil {
		starts, err = a.DeleteAllRecords(ctx, name, client.LeadersOnly)
	} else {
		starts, err = a.DeleteRecords(ctx, name, j.offsets, client.LeadersOnly)
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
}
