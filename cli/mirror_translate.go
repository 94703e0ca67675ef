package cli

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	ucli "github.com/urfave/cli/v2"

	"paymentlog/client"
	"paymentlog/wire"
)

// mirrorTranslateCommand is `paymentlog mirror translate-offsets GROUP`:
// one round of --sync-group-offsets on demand, for an operator moving a
// group to the target at a fail-over, with group set-offsets' output and
// --dry-run.
func mirrorTranslateCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "translate-offsets",
		Usage: "commit on the target a group's committed source offsets, translated by the mirror's offset syncs",
		UsageText: "paymentlog mirror translate-offsets --source-bootstrap HOST:PORT,... --bootstrap HOST:PORT,... GROUP\n" +
			"    [--dry-run] [--export] [--offset-syncs-topic NAME] [--mirror-group G]\n\n" +
			"Reads GROUP's committed offsets on the source, translates each by the offset syncs the mirror\n" +
			"wrote on the target (the target offset of the last sync at or below it: a consumer of the\n" +
			"target may see a few records again, never misses one), and commits them for GROUP on the\n" +
			"target, printing TOPIC, PARTITION, the SOURCE offset, the target group's offset BEFORE and the\n" +
			"OFFSET committed. A partition with no sync at or below its offset, or whose target offset is\n" +
			"already past the translation, is left as it is and named on stderr. --dry-run prints the plan\n" +
			"and commits nothing; --export prints TOPIC,PARTITION,OFFSET lines (group set-offsets\n" +
			"--from-file reads them) instead of the table. Refused while GROUP has members on the target.",
		Flags: withFlags(clientFlags(), sourceClientFlags(), []ucli.Flag{
			offsetSyncsTopicFlag(),
			&ucli.StringFlag{Name: "mirror-group", Value: defaultMirrorGroup, Usage: "the mirror's own group on the source, which is never translated", EnvVars: envVar("MIRROR_GROUP")},
			&ucli.BoolFlag{Name: "dry-run", Usage: "print the offsets it would commit, and commit nothing", EnvVars: envVar("MIRROR_TRANSLATE_DRY_RUN")},
			&ucli.BoolFlag{Name: "export", Usage: "print the offsets as TOPIC,PARTITION,OFFSET lines (what group set-offsets --from-file reads) instead of a table", EnvVars: envVar("MIRROR_TRANSLATE_EXPORT")},
			timeoutFlag("MIRROR_TRANSLATE_TIMEOUT", defaultAdminTimeout),
		}),
		Action: func(c *ucli.Context) error {
			opts, err := parseMirrorTranslate(c)
			if err != nil {
				return err
			}
			return runMirrorTranslate(c.Context, opts, c.App.Writer, c.App.ErrWriter)
		},
	}
}

// mirrorTranslateOptions are the flags of `mirror translate-offsets`.
type mirrorTranslateOptions struct {
	target, source   clientOptions
	group            string
	offsetSyncsTopic string
	dryRun, export   bool
	timeout          time.Duration
}

func parseMirrorTranslate(c *ucli.Context) (mirrorTranslateOptions, error) {
	group, err := oneArg(c, "group name")
	if err != nil {
		return mirrorTranslateOptions{}, err
	}
	target, err := parseClientOptions(c)
	if err != nil {
		return mirrorTranslateOptions{}, usageError("%v", err)
	}
	o := mirrorTranslateOptions{target: target, group: group, offsetSyncsTopic: c.String("offset-syncs-topic"),
		dryRun: c.Bool("dry-run"), export: c.Bool("export"), timeout: c.Duration("timeout")}
	if o.source, err = parseSourceClient(c, target); err != nil {
		return o, err
	}
	switch {
	case wire.CheckGroupName(group) != "":
		return o, usageError("group: %s", wire.CheckGroupName(group))
	case group == c.String("mirror-group"):
		return o, usageError("%s is the mirror's own group: its offsets are the source's, not a consumer's to move", group)
	case o.offsetSyncsTopic == "":
		return o, usageError("--offset-syncs-topic: required (the topic the mirror writes its offset syncs to)")
	}
	return o, checkOffsetSyncsTopic(o.offsetSyncsTopic)
}

func runMirrorTranslate(ctx context.Context, opts mirrorTranslateOptions, stdout, stderr io.Writer) error {
	if opts.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.timeout)
		defer cancel()
	}
	what := "translate offsets of group " + opts.group
	src, err := opts.source.newClient(ctx, stderr)
	if err != nil {
		return fmt.Errorf("%s: source cluster: %w", what, err)
	}
	defer closeClient(src)
	dst, err := opts.target.newClient(ctx, stderr)
	if err != nil {
		return fmt.Errorf("%s: target cluster: %w", what, err)
	}
	defer closeClient(dst)

	srcOffs, err := src.Admin().FetchOffsets(ctx, opts.group)
	if err != nil {
		return fmt.Errorf("%s: its offsets on the source: %w", what, err)
	}
	if len(srcOffs) == 0 {
		return fmt.Errorf("%s: the group has no committed offsets on the source", what)
	}
	reader := newSyncReader(dst, opts.offsetSyncsTopic)
	defer reader.close()
	if err := reader.catchUp(ctx); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if reader.bad > 0 {
		fmt.Fprintf(stderr, "%d records of %s are not offset syncs: left out\n", reader.bad, opts.offsetSyncsTopic)
	}
	desc, err := dst.Admin().DescribeGroup(ctx, opts.group)
	if err != nil {
		return fmt.Errorf("%s: the group on the target: %w", what, err)
	}
	plan := translateGroup(srcOffs, desc.Offsets, reader.syncs, nil)
	for _, g := range plan {
		if g.note != "" {
			fmt.Fprintln(stderr, g.note)
		}
	}
	commits := groupCommits(plan)
	switch {
	case opts.dryRun:
		fmt.Fprintln(stderr, "dry run: nothing committed")
	case len(commits) == 0:
		fmt.Fprintln(stderr, "nothing to commit")
	default:
		err := dst.Admin().CommitOffsets(ctx, opts.group, commits)
		if client.ErrorCode(err) == wire.NonEmptyGroup {
			return refusedWithMembers("translate offsets of group", opts.group, err)
		}
		if err != nil {
			return fmt.Errorf("%s: commit on the target: %w", what, err)
		}
	}
	if opts.export {
		var offs []wire.GroupOffset
		for _, g := range plan {
			if g.note == "" {
				offs = append(offs, wire.GroupOffset{Topic: g.tp.Topic, Partition: g.tp.Partition, Offset: g.target})
			}
		}
		return writeOffsetsFile(stdout, offs)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tSOURCE\tBEFORE\tOFFSET")
	for _, g := range plan {
		if g.note != "" {
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%d\n", g.tp.Topic, g.tp.Partition, g.source, offsetOrDash(g.before), g.target)
	}
	return tw.Flush()
}

// offsetOrDash is o, or "-" for none (-1).
func offsetOrDash(o int64) string {
	if o < 0 {
		return "-"
	}
	return fmt.Sprint(o)
}
