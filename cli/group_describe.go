package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	ucli "github.com/urfave/cli/v2"

	"paymentlog/client"
	"paymentlog/wire"
)

// groupDescribeCommand is `paymentlog group describe GROUP` (Kafka's
// kafka-consumer-groups --describe): each committed offset beside its
// partition's high watermark and the lag between them, and the group's
// members (group_members.go).
func groupDescribeCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "describe",
		Usage: "show a group's committed offsets, each partition's log end (high watermark) and the lag, and its members",
		UsageText: "paymentlog group describe GROUP [--json]\n\n" +
			"LOG END is the partition's high watermark, asked of its leader; LAG is LOG END - COMMITTED,\n" +
			"the records the group has yet to process. A partition whose leader does not answer within\n" +
			"3s (every replica down) shows \"?\" (in --json: log_end and lag -1 and an error), with\n" +
			"exit status 1.\n\n" +
			"Then, when the group has members (consume --group without --partition, or other group\n" +
			"consumers), one line each: its member id, its client id (host/pid for consume), the partitions\n" +
			"the group assigns it, and how long ago its last heartbeat reached the controller (by this\n" +
			"machine's clock).",
		Flags: groupFlags(true),
		Action: func(c *ucli.Context) error {
			name, err := oneArg(c, "group name")
			if err != nil {
				return err
			}
			opts, err := parseGroupOptions(c, name)
			if err != nil {
				return err
			}
			return runGroupDescribe(c.Context, opts, c.App.Writer, c.App.ErrWriter)
		},
	}
}

// groupDescribeJSON is `group describe --json`.
type groupDescribeJSON struct {
	Group   string            `json:"group"`
	Offsets []groupOffsetJSON `json:"offsets"`
	Members []groupMemberJSON `json:"members"`
}

type groupOffsetJSON struct {
	Topic        string `json:"topic"`
	Partition    int32  `json:"partition"`
	Committed    int64  `json:"committed"`
	LeaderEpoch  int32  `json:"leader_epoch"` // of the last record processed, -1 unknown
	LogEnd       int64  `json:"log_end"`      // the high watermark, -1 unavailable
	Lag          int64  `json:"lag"`          // -1 unknown
	LastCommit   string `json:"last_commit"`  // RFC 3339, UTC
	LastCommitMs int64  `json:"last_commit_ms"`
	Metadata     string `json:"metadata,omitempty"`
	Error        string `json:"error,omitempty"` // why log_end is unknown
}

func runGroupDescribe(ctx context.Context, opts groupOptions, stdout, stderr io.Writer) error {
	return withAdmin(ctx, opts.client, opts.timeout, stderr, func(ctx context.Context, a *client.Admin) error {
		d, err := a.DescribeGroup(ctx, opts.group)
		if err != nil {
			return fmt.Errorf("describe group %s: %w", opts.group, err)
		}
		if len(d.Offsets) == 0 && len(d.Members) == 0 {
			return fmt.Errorf("group %s has no committed offsets and no members", opts.group)
		}
		rows, err := groupLag(ctx, a, d.Offsets)
		if err != nil {
			return fmt.Errorf("describe group %s: %w", opts.group, err)
		}
		members := groupMembers(d.Members, time.Now())
		if opts.json {
			if err := printJSON(stdout, groupDescribeJSON{Group: opts.group, Offsets: rows, Members: members}); err != nil {
				return err
			}
		} else if err := printGroupDescription(stdout, rows, members); err != nil {
			return err
		}
		var unavailable []groupOffsetJSON
		for _, r := range rows {
			if r.Error != "" {
				unavailable = append(unavailable, r)
			}
		}
		if len(unavailable) == 0 {
			return nil
		}
		u := unavailable[0]
		return fmt.Errorf("describe group %s: the log end of %d of %d partitions is unavailable after %v (%s partition %d: %s)",
			opts.group, len(unavailable), len(rows), offsetsUnavailableWait, u.Topic, u.Partition, u.Error)
	})
}

// printGroupDescription prints the offsets table, then the members table
// (each only when not empty).
func printGroupDescription(w io.Writer, rows []groupOffsetJSON, members []groupMemberJSON) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(rows) > 0 {
		fmt.Fprintln(tw, "TOPIC\tPARTITION\tCOMMITTED\tLOG END\tLAG\tLAST COMMIT\tMETADATA")
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\n", r.Topic, r.Partition, r.Committed, unknownIfNeg(r.LogEnd),
				unknownIfNeg(r.Lag), r.LastCommit, cmp.Or(r.Metadata, "-"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(members) == 0 {
		return nil
	}
	if len(rows) > 0 {
		fmt.Fprintln(w)
	}
	printMembers(tw, members)
	return tw.Flush()
}

// groupLag puts each committed offset beside its partition's high
// watermark. A partition whose leader does not answer within
// offsetsUnavailableWait gets log end and lag -1 and the reason; a topic
// deleted since the offsets were read, the reason only.
func groupLag(ctx context.Context, a *client.Admin, offs []wire.GroupOffset) ([]groupOffsetJSON, error) {
	var topics []string
	for _, o := range offs {
		if !slices.Contains(topics, o.Topic) {
			topics = append(topics, o.Topic)
		}
	}
	ends := map[string]map[int32]int64{}
	why := map[string]map[int32]error{}
	topicErr := map[string]error{}
	for _, t := range topics {
		e, unavailable, err := a.ListOffsetsAvailable(ctx, t, client.SeekEnd, offsetsUnavailableWait)
		if client.ErrorCode(err) == wire.UnknownTopicOrPartition {
			topicErr[t] = err // deleted meanwhile: its offsets went with it
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("log end offsets of topic %s: %w", t, err)
		}
		ends[t], why[t] = e, unavailable
	}
	rows := make([]groupOffsetJSON, 0, len(offs))
	for _, o := range offs {
		r := groupOffsetJSON{Topic: o.Topic, Partition: o.Partition, Committed: o.Offset, LeaderEpoch: o.LeaderEpoch,
			LogEnd: -1, Lag: -1, LastCommit: commitTime(o.CommitTimeMs), LastCommitMs: o.CommitTimeMs, Metadata: o.Metadata}
		end, ok := ends[o.Topic][o.Partition]
		switch {
		case ok:
			// A committed offset past the end (the log truncated since)
			// has nothing left to process.
			r.LogEnd, r.Lag = end, max(end-o.Offset, 0)
		case topicErr[o.Topic] != nil:
			r.Error = topicErr[o.Topic].Error()
		case why[o.Topic][o.Partition] != nil:
			r.Error = why[o.Topic][o.Partition].Error()
		default:
			r.Error = "no answer"
		}
		rows = append(rows, r)
	}
	return rows, nil
}
