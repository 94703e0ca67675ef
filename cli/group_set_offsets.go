package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	ucli "github.com/urfave/cli/v2"

	"paymentlog/client"
	"paymentlog/wire"
)

// groupSetOffsetsCommand is `paymentlog group set-offsets GROUP TOPIC --to
// ...` (Kafka's kafka-consumer-groups --reset-offsets): rewind or skip a
// group's consumption of a topic, by a target (--to), by a distance from
// where the group is (--shift-by), or to the offsets a file lists
// (--from-file). It commits only with --execute (offsets_execute.go);
// without it, it prints the plan.
func groupSetOffsetsCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "set-offsets",
		Usage: "set a group's committed offsets: earliest, latest, an offset, a time, a shift, or from a file",
		UsageText: "paymentlog group set-offsets GROUP TOPIC --to earliest|latest|OFFSET|TIME | --shift-by N [--partition N] [--execute] [--export]\n" +
			"   paymentlog group set-offsets GROUP --from-file FILE [--execute] [--export]\n\n" +
			"Plans, for every partition of TOPIC (or --partition N), the log start (earliest), the high\n" +
			"watermark (latest), OFFSET (which must lie between the two), or each partition's first record\n" +
			"stamped at or after TIME (RFC 3339 such as 2026-12-01T09:30:00Z, @UNIX_MS, or now-DURATION\n" +
			"such as now-2h30m; the high watermark where none is yet), prints the offsets before and after,\n" +
			"and commits them with --execute (without it, or with --dry-run, nothing is committed, as in\n" +
			"Kafka). --shift-by N moves each partition's committed offset by N (negative: back), kept\n" +
			"between the log start and the high watermark as Kafka does (each partition so kept is named on\n" +
			"stderr); a partition with no committed offset is refused. --from-file FILE (- for stdin) sets\n" +
			"the offsets it lists, one TOPIC,PARTITION,OFFSET per line, the format --export prints and\n" +
			"Kafka's kafka-consumer-groups reads and writes. Save a group's position before a risky change\n" +
			"with --shift-by 0 --export > FILE.\n\n" +
			"The group is created if it has none yet. It is refused while the group has members (consume\n" +
			"--group without --partition running): stop them first; they resume at the new offsets.\n" +
			"Consumers using the group without membership (--partition) are not known to the cluster: a\n" +
			"running one commits its own position over these, so stop them first too.",
		Flags: groupFlags(false,
			&ucli.StringFlag{Name: "to", Usage: "earliest | latest | OFFSET | TIME (RFC 3339, @UNIX_MS or now-DURATION)", EnvVars: envVar("GROUP_SET_OFFSETS_TO")},
			&ucli.Int64Flag{Name: "shift-by", Usage: "move each committed offset by `N` (negative: back), kept between the log start and the high watermark", EnvVars: envVar("GROUP_SET_OFFSETS_SHIFT_BY")},
			&ucli.StringFlag{Name: "from-file", Usage: "set the offsets `FILE` lists (TOPIC,PARTITION,OFFSET per line; - for stdin)", EnvVars: envVar("GROUP_SET_OFFSETS_FROM_FILE")},
			&ucli.IntFlag{Name: "partition", Value: -1, Usage: "only this partition (-1: every partition)", EnvVars: envVar("GROUP_SET_OFFSETS_PARTITION")},
			executeFlag("GROUP_SET_OFFSETS"),
			&ucli.BoolFlag{Name: "dry-run", Usage: "print the offsets it would commit, and commit nothing (the default without --execute)", EnvVars: envVar("GROUP_SET_OFFSETS_DRY_RUN")},
			&ucli.BoolFlag{Name: "export", Usage: "print the offsets as TOPIC,PARTITION,OFFSET lines (what --from-file reads) instead of a table", EnvVars: envVar("GROUP_SET_OFFSETS_EXPORT")},
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
	topic     string // empty with --from-file
	partition int32  // -1: all
	// to is client.SeekBeginning, client.SeekEnd or an offset; toTime,
	// when not zero, replaces it.
	to     int64
	toTime time.Time
	// shift, when shifting, replaces both.
	shifting bool
	shift    int64
	// file, when not nil, replaces all of them.
	file   []offsetsFileEntry
	commit commitMode
	export bool
}

func parseGroupSetOffsets(c *ucli.Context) (groupSetOffsetsOptions, error) {
	usage, _, _ := strings.Cut(c.Command.UsageText, "\n")
	modes := 0
	for _, f := range []string{"to", "shift-by", "from-file"} {
		if c.IsSet(f) {
			modes++
		}
	}
	fromFile := c.IsSet("from-file")
	switch {
	case c.NArg() == 0 && fromFile:
		return groupSetOffsetsOptions{}, usageError("missing group name (usage: paymentlog group set-offsets GROUP --from-file FILE)")
	case c.NArg() == 0:
		return groupSetOffsetsOptions{}, usageError("missing group name and topic (usage: %s)", usage)
	case fromFile && c.NArg() > 1:
		return groupSetOffsetsOptions{}, usageError("--from-file names the topics: give only the group, got %d arguments: %s", c.NArg(), strings.Join(c.Args().Slice(), " "))
	case c.NArg() == 1 && !fromFile:
		return groupSetOffsetsOptions{}, usageError("missing topic after the group name (usage: %s)", usage)
	case c.NArg() > 2:
		return groupSetOffsetsOptions{}, usageError("expected a group name and a topic, got %d arguments: %s", c.NArg(), strings.Join(c.Args().Slice(), " "))
	}
	g, err := parseGroupOptions(c, c.Args().Get(0))
	if err != nil {
		return groupSetOffsetsOptions{}, err
	}
	o := groupSetOffsetsOptions{groupOptions: g, topic: c.Args().Get(1), partition: int32(c.Int("partition")),
		export: c.Bool("export")}
	if o.commit, err = parseCommitMode(c); err != nil {
		return o, err
	}
	switch {
	case modes == 0:
		return o, usageError("--to earliest|latest|OFFSET|TIME is required (or --shift-by N, or --from-file FILE)")
	case modes > 1:
		return o, usageError("give only one of --to, --shift-by and --from-file")
	case fromFile && c.IsSet("partition"):
		return o, usageError("--partition does not go with --from-file: the file names the partitions")
	case !fromFile && o.topic == "":
		return o, usageError("the topic name is empty")
	case o.partition < -1:
		return o, usageError("--partition must be >= 0 (or -1 for all)")
	}
	switch {
	case fromFile:
		if o.file, err = readOffsetsFileArg(c.String("from-file"), c.App.Reader); err != nil {
			return o, usageError("--from-file: %v", err)
		}
	case c.IsSet("shift-by"):
		o.shifting, o.shift = true, c.Int64("shift-by")
	default:
		if o.to, o.toTime, err = parseFrom(c.String("to")); err != nil {
			return o, usageError("--to: %q is not earliest, latest, a non-negative offset or a time (RFC 3339, @UNIX_MS or now-DURATION)", c.String("to"))
		}
	}
	return o, nil
}

// readOffsetsFileArg reads the file --from-file names, or stdin for "-".
func readOffsetsFileArg(name string, stdin io.Reader) ([]offsetsFileEntry, error) {
	if name == "-" {
		return readOffsetsFile(stdin, "stdin")
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readOffsetsFile(f, name)
}

func runGroupSetOffsets(ctx context.Context, opts groupSetOffsetsOptions, stdout, stderr io.Writer) error {
	return withAdmin(ctx, opts.client, opts.timeout, stderr, func(ctx context.Context, a *client.Admin) error {
		what := fmt.Sprintf("set offsets of group %s", opts.group)
		if opts.topic != "" {
			what += " on topic " + opts.topic
		}
		before, err := a.FetchOffsets(ctx, opts.group, opts.topics()...)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		plan, err := planSetOffsets(ctx, a, opts, before)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		for _, n := range plan.notes {
			fmt.Fprintln(stderr, n)
		}
		if opts.commit.dryRun {
			opts.commit.reportDryRun(stderr)
		} else if err := a.CommitOffsets(ctx, opts.group, plan.offsets); client.ErrorCode(err) == wire.NonEmptyGroup {
			return refusedWithMembers("set offsets of group", opts.group, err)
		} else if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if opts.export {
			return writeOffsetsFile(stdout, plan.offsets)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TOPIC\tPARTITION\tBEFORE\tOFFSET")
		for _, o := range plan.offsets {
			prev := "-"
			if i := slices.IndexFunc(before, func(b wire.GroupOffset) bool { return b.Topic == o.Topic && b.Partition == o.Partition }); i >= 0 {
				prev = fmt.Sprint(before[i].Offset)
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%d\n", o.Topic, o.Partition, prev, o.Offset)
		}
		return tw.Flush()
	})
}

// topics are the topics the command sets offsets of.
func (o groupSetOffsetsOptions) topics() []string {
	if o.file == nil {
		return []string{o.topic}
	}
	var ts []string
	for _, e := range o.file {
		if !slices.Contains(ts, e.Topic) {
			ts = append(ts, e.Topic)
		}
	}
	slices.Sort(ts)
	return ts
}
