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
// --execute (offsets_execute.go).
func mirrorTranslateCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "translate-offsets",
		Usage: "commit on the target a group's committed source offsets, translated by the mirror's offset syncs",
		UsageText: "paymentlog mirror translate-offsets --source-bootstrap HOST:PORT,... --bootstrap HOST:PORT,... GROUP\n" +
			"    [--execute] [--export] [--offset-syncs-topic NAME] [--mirror-group G] [--header-scan=false]\n" +
			"    [--replication-policy identity|prefix --source-alias A]\n\n" +
			"Reads GROUP's committed offsets on the source, translates each by the offset syncs the mirror\n" +
			"wrote on the target (the target offset of the last sync at or below it: a consumer of the\n" +
			"target may see a few records again, never misses one), and with --execute commits them for\n" +
			"GROUP on the target (without it, or with --dry-run, nothing is committed), printing TOPIC, PARTITION, the SOURCE offset, the target group's offset BEFORE and the\n" +
			"OFFSET committed (at least the target partition's log start). A partition with no sync at or\n" +
			"below its offset (copied before the syncs existed) is translated by a binary search of the\n" +
			"target partition for the first copy of a source offset at or past it, by its\n" +
			"paymentlog.mirror.source header (about 2 + log2(records) fetches of 64 KiB; --header-scan=false:\n" +
			"none). A partition left untranslated, or whose target offset is already past the\n" +
			"translation, is left as it is and named on stderr. --export prints TOPIC,PARTITION,OFFSET\n" +
			"lines (group set-offsets --from-file reads them) instead of the table. Refused while GROUP\n" +
			"has members on the target. Give the mirror's --replication-policy and --source-alias: with\n" +
			"prefix, GROUP's source offsets of T are committed as offsets of A.T on the target (TOPIC).",
		Flags: withFlags(clientFlags(), sourceClientFlags(), []ucli.Flag{
			offsetSyncsTopicFlag(),
			&ucli.BoolFlag{Name: "header-scan", Value: true, Usage: "translate a partition with no offset sync at or below the group's offset by searching the target partition's records for their mirror header (--header-scan=false: leave it as it is)", EnvVars: envVar("MIRROR_TRANSLATE_HEADER_SCAN")},
			timeoutFlag("MIRROR_TRANSLATE_TIMEOUT", defaultAdminTimeout),
		}, groupOffsetsFlags("MIRROR_TRANSLATE"), replicationPolicyFlags(false)),
		Action: func(c *ucli.Context) error {
			opts, err := parseMirrorTranslate(c)
			if err != nil {
				return err
			}
			return runMirrorTranslate(c.Context, opts, c.App.Writer, c.App.ErrWriter)
		},
	}
}

// mirrorTranslateOptions are the flags of `mirror translate-offsets`: the
// group's offsets are read on the source, committed on the target.
type mirrorTranslateOptions struct {
	groupOffsetsOptions
	headerScan bool
}

func parseMirrorTranslate(c *ucli.Context) (mirrorTranslateOptions, error) {
	g, err := parseGroupOffsetsArgs(c)
	return mirrorTranslateOptions{groupOffsetsOptions: g, headerScan: c.Bool("header-scan")}, err
}

// groupOffsetsOptions are the flags translate-offsets and failback-offsets
// share (parseGroupOffsetsArgs).
type groupOffsetsOptions struct {
	// target holds the copies and the offset syncs; source, the
	// original topics.
	target, source   clientOptions
	group            string
	offsetSyncsTopic string
	commit           commitMode
	export           bool
	timeout          time.Duration
	// policy names the copies.
	policy replicationPolicy
}

// groupOffsetsFlags are the flags translate-offsets and failback-offsets
// share but for their variables' prefix env: the mirror's group, never
// moved, and what is done with the plan (offsets_execute.go).
func groupOffsetsFlags(env string) []ucli.Flag {
	return []ucli.Flag{
		&ucli.StringFlag{Name: "mirror-group", Value: defaultMirrorGroup, Usage: "the mirror's own group on the source, whose offsets are never moved", EnvVars: envVar("MIRROR_GROUP")},
		executeFlag(env),
		&ucli.BoolFlag{Name: "dry-run", Usage: "print the offsets it would commit, and commit nothing (the default without --execute)", EnvVars: envVar(env + "_DRY_RUN")},
		&ucli.BoolFlag{Name: "export", Usage: "print the offsets as TOPIC,PARTITION,OFFSET lines (what group set-offsets --from-file reads) instead of a table", EnvVars: envVar(env + "_EXPORT")},
	}
}

// parseGroupOffsetsArgs reads what translate-offsets and failback-offsets
// share: the group argument, the two clusters, --execute or --dry-run,
// --export, --timeout, the replication policy, and checks
// --offset-syncs-topic.
func parseGroupOffsetsArgs(c *ucli.Context) (groupOffsetsOptions, error) {
	o := groupOffsetsOptions{offsetSyncsTopic: c.String("offset-syncs-topic"), export: c.Bool("export"), timeout: c.Duration("timeout")}
	var err error
	if o.group, err = oneArg(c, "group name"); err != nil {
		return o, err
	}
	if o.target, err = parseClientOptions(c); err != nil {
		return o, usageError("%v", err)
	}
	if o.source, err = parseSourceClient(c, o.target); err != nil {
		return o, err
	}
	if o.commit, err = parseCommitMode(c); err != nil {
		return o, err
	}
	if o.policy, err = parseReplicationPolicy(c); err != nil {
		return o, err
	}
	switch {
	case wire.CheckGroupName(o.group) != "":
		return o, usageError("group: %s", wire.CheckGroupName(o.group))
	case o.group == c.String("mirror-group"):
		return o, usageError("%s is the mirror's own group: its offsets are the source's, not a consumer's to move", o.group)
	case o.offsetSyncsTopic == "":
		return o, usageError("--offset-syncs-topic: required (the topic the mirror writes its offset syncs to)")
	}
	return o, checkOffsetSyncsTopic(o.offsetSyncsTopic)
}

// mirrorClients connects to the source and the target.
func mirrorClients(ctx context.Context, source, target clientOptions, stderr io.Writer) (src, dst *client.Client, err error) {
	if src, err = source.newClient(ctx, stderr); err != nil {
		return nil, nil, fmt.Errorf("source cluster: %w", err)
	}
	if dst, err = target.newClient(ctx, stderr); err != nil {
		closeClient(src)
		return nil, nil, fmt.Errorf("target cluster: %w", err)
	}
	return src, dst, nil
}

func runMirrorTranslate(ctx context.Context, opts mirrorTranslateOptions, stdout, stderr io.Writer) error {
	if opts.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.timeout)
		defer cancel()
	}
	what := "translate offsets of group " + opts.group
	src, dst, err := mirrorClients(ctx, opts.source, opts.target, stderr)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer closeClient(src)
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
	switch err := reader.catchUp(ctx); {
	case client.ErrorCode(err) == wire.UnknownTopicOrPartition && opts.headerScan:
		// Mirrored without syncs (--offset-syncs-topic '', or a target
		// where it could not be created): the header scan may do.
		fmt.Fprintf(stderr, "no offset syncs topic %s on the target: translating by the mirror headers of the target's records\n", opts.offsetSyncsTopic)
	case err != nil:
		return fmt.Errorf("%s: %w", what, err)
	}
	reader.report(stderr)
	desc, err := dst.Admin().DescribeGroup(ctx, opts.group)
	if err != nil {
		return fmt.Errorf("%s: the group on the target: %w", what, err)
	}
	targets, err := newTargetDescriber(dst.Admin(), opts.policy).describe(ctx, srcOffs, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	plan := translateGroup(srcOffs, desc.Offsets, reader.syncs, targets, opts.policy, nil)
	if opts.headerScan {
		if err := scanHeaders(ctx, dst, plan, targets); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	rows := make([]offsetsRow, len(plan))
	for i, g := range plan {
		rows[i] = offsetsRow{tp: g.dst, from: g.source, before: g.before, offset: g.target, note: g.note, info: g.info}
	}
	return offsetsPlan{what: what, refusal: "translate offsets of group", group: opts.group, cluster: "target", admin: dst.Admin(),
		commit: opts.commit, export: opts.export, fromColumn: "SOURCE", rows: rows, commits: groupCommits(plan)}.finish(ctx, stdout, stderr)
}

// offsetsRow is one partition of a translate-offsets or failback-offsets
// plan.
type offsetsRow struct {
	tp client.TopicPartition // committed
	// from is the offset translated (SOURCE, or COPY); before the
	// group's offset of tp, -1 for none; offset the one committed.
	from, before, offset int64
	// note says why it is not committed (not printed in the table);
	// info something of one that is.
	note, info string
}

// offsetsPlan is what translate-offsets and failback-offsets end with.
type offsetsPlan struct {
	// what prefixes errors ("translate offsets of group G"); refusal is
	// the refusal's ("translate offsets of group").
	what, refusal, group string
	// cluster names the cluster admin commits to ("target", "source").
	cluster    string
	admin      *client.Admin
	commit     commitMode
	export     bool
	fromColumn string // the name of the from column
	rows       []offsetsRow
	commits    []wire.GroupOffset
}

// finish says the rows' notes and infos on stderr, commits (unless a
// dry run; refused while the group has members), and prints the rows
// without a note: a table, or --export's TOPIC,PARTITION,OFFSET lines.
func (p offsetsPlan) finish(ctx context.Context, stdout, stderr io.Writer) error {
	for _, r := range p.rows {
		if r.info != "" {
			fmt.Fprintln(stderr, r.info)
		}
		if r.note != "" {
			fmt.Fprintln(stderr, r.note)
		}
	}
	switch {
	case p.commit.dryRun:
		p.commit.reportDryRun(stderr)
	case len(p.commits) == 0:
		fmt.Fprintln(stderr, "nothing to commit")
	default:
		err := p.admin.CommitOffsets(ctx, p.group, p.commits)
		if client.ErrorCode(err) == wire.NonEmptyGroup {
			return refusedWithMembers(p.refusal, p.group, err)
		}
		if err != nil {
			return fmt.Errorf("%s: commit on the %s: %w", p.what, p.cluster, err)
		}
	}
	if p.export {
		var offs []wire.GroupOffset
		for _, r := range p.rows {
			if r.note == "" {
				offs = append(offs, wire.GroupOffset{Topic: r.tp.Topic, Partition: r.tp.Partition, Offset: r.offset})
			}
		}
		return writeOffsetsFile(stdout, offs)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "TOPIC\tPARTITION\t%s\tBEFORE\tOFFSET\n", p.fromColumn)
	for _, r := range p.rows {
		if r.note == "" {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%d\n", r.tp.Topic, r.tp.Partition, r.from, offsetOrDash(r.before), r.offset)
		}
	}
	return tw.Flush()
}

// scanHeaders translates the partitions of plan with no offset sync by
// the header scan (mirror_header_scan.go). A partition it cannot
// translate keeps its note, with why; only ctx's end is an error.
func scanHeaders(ctx context.Context, dst *client.Client, plan []groupTranslation, targets map[client.TopicPartition]targetPartition) error {
	var scanner *headerScanner
	for i := range plan {
		g := &plan[i]
		if !g.noSync {
			continue
		}
		tgt := targets[g.tp]
		if tgt.logStart < 0 || tgt.end < 0 {
			g.note += "; the header scan cannot read it (no leader answered)"
			continue
		}
		if scanner == nil {
			scanner = newHeaderScanner(dst)
			defer scanner.close()
		}
		at, probes, err := scanner.scan(ctx, g.dst, g.tp, tgt.logStart, tgt.end, g.source)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			g.note += fmt.Sprintf("; the header scan did not translate it: %v", err)
			continue
		}
		g.settle(at, tgt.logStart)
		if g.info == "" {
			g.info = fmt.Sprintf("%s: no offset sync at or below source offset %d: translated to %d by the mirror headers of the target's records (%d probes)",
				g.where(), g.source, at, probes)
		}
	}
	return nil
}

// offsetOrDash is o, or "-" for none (-1).
func offsetOrDash(o int64) string {
	if o < 0 {
		return "-"
	}
	return fmt.Sprint(o)
}
