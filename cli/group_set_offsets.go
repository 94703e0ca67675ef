package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	ucli "github.com/urfave/cli/v2"

	"paymentlog/client"
	"paymentlog/wire"
)

// groupSetOffsetsCommand is `paymentlog group set-offsets GROUP TOPIC --to
// ...` (Kafka's kafka-consumer-groups --reset-offsets --execute): rewind or
// skip a group's consumption of a topic.
func groupSetOffsetsCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "set-offsets",
		Usage: "set a group's committed offsets of a topic: earliest, latest, an offset or a time",
		UsageText: "paymentlog group set-offsets GROUP TOPIC --to earliest|latest|OFFSET|TIME [--partition N]\n\n" +
			"Commits, for every partition of TOPIC (or --partition N), the log start (earliest), the high\n" +
			"watermark (latest), OFFSET (which must lie between the two), or each partition's first record\n" +
			"stamped at or after TIME (RFC 3339 such as 2026-12-01T09:30:00Z, or @UNIX_MS; the high\n" +
			"watermark where none is yet), and prints the offsets before and after. The group is created\n" +
			"if it has none yet. It is refused while the group has members (consume --group without\n" +
			"--partition running): stop them first; they resume at the new offsets. Consumers using the\n" +
			"group without membership (--partition) are not known to the cluster: a running one commits\n" +
			"its own position over these, so stop them first too.",
		Flags: groupFlags(false,
			&ucli.StringFlag{Name: "to", Usage: "earliest | latest | OFFSET | TIME (RFC 3339 or @UNIX_MS)", EnvVars: envVar("GROUP_SET_OFFSETS_TO")},
			&ucli.IntFlag{Name: "partition", Value: -1, Usage: "only this partition (-1: every partition)", EnvVars: envVar("GROUP_SET_OFFSETS_PARTITION")},
		),
		Action: func(c *ucli.Context) error {
			opts, err := parseGroupSetOffsets(c)
			if err != nil {
				return err
			}
			return runGroupSetOffsets(c.Context, opts, c.App.Writer, c.App.ErrWriter)
		},
	}
}

// groupSetOffsetsOptions are the flags of `group set-offsets`.
type groupSetOffsetsOptions struct {
	groupOptions
	topic     string
	partition int32 // -1: all
	// to is client.SeekBeginning, client.SeekEnd or an offset; toTime,
	// when not zero, replaces it.
	to     int64
	toTime time.Time
}

func parseGroupSetOffsets(c *ucli.Context) (groupSetOffsetsOptions, error) {
	usage, _, _ := strings.Cut(c.Command.UsageText, "\n")
	switch c.NArg() {
	case 0:
		return groupSetOffsetsOptions{}, usageError("missing group name and topic (usage: %s)", usage)
	case 1:
		return groupSetOffsetsOptions{}, usageError("missing topic after the group name (usage: %s)", usage)
	case 2:
	default:
		return groupSetOffsetsOptions{}, usageError("expected a group name and a topic, got %d arguments: %s", c.NArg(), strings.Join(c.Args().Slice(), " "))
	}
	g, err := parseGroupOptions(c, c.Args().Get(0))
	if err != nil {
		return groupSetOffsetsOptions{}, err
	}
	o := groupSetOffsetsOptions{groupOptions: g, topic: c.Args().Get(1), partition: int32(c.Int("partition"))}
	if o.topic == "" {
		return o, usageError("the topic name is empty")
	}
	if !c.IsSet("to") {
		return o, usageError("--to earliest|latest|OFFSET|TIME is required")
	}
	if o.to, o.toTime, err = parseFrom(c.String("to")); err != nil {
		return o, usageError("--to: %q is not earliest, latest, a non-negative offset or a time (RFC 3339, or @UNIX_MS)", c.String("to"))
	}
	if o.partition < -1 {
		return o, usageError("--partition must be >= 0 (or -1 for all)")
	}
	return o, nil
}

func runGroupSetOffsets(ctx context.Context, opts groupSetOffsetsOptions, stdout, stderr io.Writer) error {
	return withAdmin(ctx, opts.client, opts.timeout, stderr, func(ctx context.Context, a *client.Admin) error {
		what := fmt.Sprintf("set offsets of group %s on topic %s", opts.group, opts.topic)
		offs, err := resolveSetOffsets(ctx, a, opts)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		before, err := a.FetchOffsets(ctx, opts.group, opts.topic)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if err := a.CommitOffsets(ctx, opts.group, offs); client.ErrorCode(err) == wire.NonEmptyGroup {
			return refusedWithMembers("set offsets of group", opts.group, err)
		} else if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TOPIC\tPARTITION\tBEFORE\tOFFSET")
		for _, o := range offs {
			prev := "-"
			if i := slices.IndexFunc(before, func(b wire.GroupOffset) bool { return b.Partition == o.Partition }); i >= 0 {
				prev = fmt.Sprint(before[i].Offset)
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%d\n", o.Topic, o.Partition, prev, o.Offset)
		}
		return tw.Flush()
	})
}

// resolveSetOffsets turns --to into an offset for each partition chosen,
// asking the leaders (ListOffsets).
func resolveSetOffsets(ctx context.Context, a *client.Admin, opts groupSetOffsetsOptions) ([]wire.GroupOffset, error) {
	timed, explicit := !opts.toTime.IsZero(), opts.toTime.IsZero() && opts.to >= 0
	at := opts.to
	switch {
	case timed:
		at = opts.toTime.UnixMilli()
	case explicit:
		at = client.SeekEnd // OFFSET must lie between the log start and the end
	}
	offs, err := a.ListOffsets(ctx, opts.topic, at)
	if err != nil {
		return nil, err
	}
	var parts []int32
	for p := range offs {
		if opts.partition < 0 || p == opts.partition {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("topic has %d partitions; no partition %d", len(offs), opts.partition)
	}
	slices.Sort(parts)
	switch {
	case timed && slices.ContainsFunc(parts, func(p int32) bool { return offs[p] < 0 }):
		// No record stamped at or after the time yet: the ones produced
		// from now on are.
		ends, err := a.ListOffsets(ctx, opts.topic, client.SeekEnd)
		if err != nil {
			return nil, err
		}
		for _, p := range parts {
			if offs[p] < 0 {
				offs[p] = ends[p]
			}
		}
	case explicit:
		starts, err := a.ListOffsets(ctx, opts.topic, client.SeekBeginning)
		if err != nil {
			return nil, err
		}
		for _, p := range parts {
			if opts.to < starts[p] || opts.to > offs[p] {
				return nil, fmt.Errorf("partition %d has offsets %d to %d; %d is outside them", p, starts[p], offs[p], opts.to)
			}
			offs[p] = opts.to
		}
	}
	out := make([]wire.GroupOffset, 0, len(parts))
	for _, p := range parts {
		out = append(out, wire.GroupOffset{Topic: opts.topic, Partition: p, Offset: offs[p], LeaderEpoch: -1})
	}
	return out, nil
}
