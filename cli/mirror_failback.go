package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"paymentlog/client"
	"paymentlog/wire"
)

// mirrorFailbackCommand is `paymentlog mirror failback-offsets GROUP`:
// the way back after a fail-over (mirror_failback_plan.go). Its flags name
// the clusters as the mirror flow's: --source-bootstrap the original (the
// source of the flow, where the offsets are committed), --bootstrap the
// cluster with the copies and the offset syncs (the flow's target, where
// the group consumed meanwhile). A subcommand of its own rather than a
// translate-offsets --reverse: it commits on the other cluster than
// translate-offsets, so one mistyped flag must not turn one into the
// other, and its table and rules (the source's log end) are its own.
func mirrorFailbackCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "failback-offsets",
		Usage: "commit on the source a group's committed offsets of the copies on the target, translated back by the mirror's offset syncs (a fail-back)",
		UsageText: "paymentlog mirror failback-offsets --source-bootstrap HOST:PORT,... --bootstrap HOST:PORT,... GROUP\n" +
			"    [--execute] [--export] [--rewind] [--offset-syncs-topic NAME] [--mirror-group G]\n" +
			"    [--replication-policy identity|prefix --source-alias A]\n\n" +
			"After a fail-over the group consumed the copies on the target (--bootstrap: A.T with the prefix\n" +
			"policy, T with identity). Reads GROUP's committed offsets of the copies there, maps each back by\n" +
			"the offset syncs the mirror from the source wrote on the target (the source offset of the sync at\n" +
			"or below the group's copy offset with the greatest source offset), raised by the mirror headers\n" +
			"(paymentlog.mirror.source) of the copy's records from that sync up to the group's offset (at\n" +
			"most 10,000 read; a copy without syncs goes by them alone): a consumer of the source may read\n" +
			"again records it consumed on the copy, never misses one. With --execute it commits them for\n" +
			"GROUP on the source (--source-bootstrap) for the original topic T (without it, or with\n" +
			"--dry-run, nothing is committed), printing TOPIC, PARTITION, the group's offset of the COPY,\n" +
			"its offset on the source BEFORE and the OFFSET committed. An offset past the source partition's\n" +
			"high watermark (the source lost records the copy has) commits the high watermark, one below its\n" +
			"log start the log start, each said on stderr. A partition whose source offset is already past\n" +
			"the fail-back is left as it is (--rewind: moved back), as is one with no sync at or below the\n" +
			"group's offset; each is named on stderr. Refused while GROUP has members on the source. Run it\n" +
			"before producers write to the source again: a source that lost records and takes new ones at\n" +
			"their offsets cannot be told from one that did not. --export prints TOPIC,PARTITION,OFFSET\n" +
			"lines (group set-offsets --from-file reads them) instead of the table.",
		Flags: withFlags(clientFlags(), sourceClientFlags(), []ucli.Flag{
			offsetSyncsTopicFlag(),
			&ucli.BoolFlag{Name: "rewind", Usage: "commit the fail-back even where the group's offset on the source is past it (it reads those records again)", EnvVars: envVar("MIRROR_FAILBACK_REWIND")},
			timeoutFlag("MIRROR_FAILBACK_TIMEOUT", defaultAdminTimeout),
		}, groupOffsetsFlags("MIRROR_FAILBACK"), replicationPolicyFlags(false)),
		Action: func(c *ucli.Context) error {
			opts, err := parseMirrorFailback(c)
			if err != nil {
				return err
			}
			return runMirrorFailback(c.Context, opts, c.App.Writer, c.App.ErrWriter)
		},
	}
}

// mirrorFailbackOptions are the flags of `mirror failback-offsets`: the
// group's offsets are read on the target, committed on the source.
type mirrorFailbackOptions struct {
	groupOffsetsOptions
	rewind bool
}

func parseMirrorFailback(c *ucli.Context) (mirrorFailbackOptions, error) {
	g, err := parseGroupOffsetsArgs(c)
	return mirrorFailbackOptions{groupOffsetsOptions: g, rewind: c.Bool("rewind")}, err
}

func runMirrorFailback(ctx context.Context, opts mirrorFailbackOptions, stdout, stderr io.Writer) error {
	if opts.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.timeout)
		defer cancel()
	}
	what := "fail back offsets of group " + opts.group
	src, dst, err := mirrorClients(ctx, opts.source, opts.target, stderr)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer closeClient(src)
	defer closeClient(dst)

	onCopy, err := dst.Admin().DescribeGroup(ctx, opts.group)
	if err != nil {
		return fmt.Errorf("%s: the group on the target: %w", what, err)
	}
	if len(onCopy.Offsets) == 0 {
		return fmt.Errorf("%s: the group has no committed offsets on the target", what)
	}
	if n := len(onCopy.Members); n > 0 {
		fmt.Fprintf(stderr, "group %s has %d members on the target, still consuming: these are its offsets now, and the source group will read "+
			"again what they consume from here on (stop them first)\n", opts.group, n)
	}
	reader := newSyncReader(dst, opts.offsetSyncsTopic)
	defer reader.close()
	switch err := reader.catchUp(ctx); {
	case client.ErrorCode(err) == wire.UnknownTopicOrPartition:
		// Mirrored without syncs: the mirror headers may do
		// (failbackByHeaders).
		fmt.Fprintf(stderr, "no offset syncs topic %s on the target: failing back by the mirror headers of the copies' records\n", opts.offsetSyncsTopic)
	case err != nil:
		return fmt.Errorf("%s: %w", what, err)
	}
	reader.report(stderr)
	onSource, err := src.Admin().FetchOffsets(ctx, opts.group)
	if err != nil {
		return fmt.Errorf("%s: the group on the source: %w", what, err)
	}
	var originals []wire.GroupOffset
	for _, o := range onCopy.Offsets {
		if topic, ok := opts.policy.sourceTopic(o.Topic); ok {
			originals = append(originals, wire.GroupOffset{Topic: topic, Partition: o.Partition})
		}
	}
	// The originals, described on the source (an identity policy: their
	// own names).
	originalTopics := newTargetDescriber(src.Admin(), replicationPolicy{})
	originalTopics.cluster = "source"
	sources, err := originalTopics.describe(ctx, originals, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	plan, notCopies := planFailback(onCopy.Offsets, onSource, reader.syncs, sources, opts.policy, opts.rewind)
	copies, err := newTargetDescriber(dst.Admin(), opts.policy).describe(ctx, originals, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := failbackByHeaders(ctx, dst, plan, copies, opts.rewind); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if len(notCopies) > 0 {
		fmt.Fprintf(stderr, "left alone: the group's offsets of %s on the target, not copies from %s\n", strings.Join(notCopies, ", "), opts.policy.sourceAlias)
	}
	rows := make([]offsetsRow, len(plan))
	for i, f := range plan {
		rows[i] = offsetsRow{tp: f.tp, from: f.at, before: f.before, offset: f.offset, note: f.note, info: f.info}
	}
	return offsetsPlan{what: what, refusal: "fail back offsets of group", group: opts.group, cluster: "source", admin: src.Admin(),
		commit: opts.commit, export: opts.export, fromColumn: "COPY", rows: rows, commits: failbackCommits(plan)}.finish(ctx, stdout, stderr)
}

// failbackByHeaders raises the fail-back of each partition of plan whose
// group offset T is of the copy's current incarnation (copies, by source
// partition) by the mirror headers of the copy's records below T: a copy
// of source offset h below T says the group consumed h and every source
// record below it (every run of the mirror copies in order from at or
// below where the last one stopped: mirror_header_scan.go), so h+1 holds.
// It reads from the sync's target offset, or from headerScanMaxRecords
// below T where that is further (the copy's log start at the earliest),
// up to T: between two syncs, and at the copy's end after a mirror that
// was killed before its last sync, it finds where the group stopped. A
// partition with no sync is failed back by the headers alone, when they
// name a source offset. Only ctx's end is an error; a read that fails
// leaves the syncs' fail-back, said on stderr by the note.
func failbackByHeaders(ctx context.Context, dst *client.Client, plan []failbackPartition, copies map[client.TopicPartition]targetPartition, rewind bool) error {
	var scanner *headerScanner
	for i := range plan {
		f := &plan[i]
		cp, ok := copies[f.tp]
		if f.src.topic == "" || !ok || cp.topicID != f.copyID || cp.logStart < 0 || cp.end < 0 {
			continue
		}
		from, to := max(cp.logStart, f.syncTarget, f.at-headerScanMaxRecords), min(f.at, cp.end)
		if from >= to {
			continue
		}
		if scanner == nil {
			scanner = newHeaderScanner(dst)
			defer scanner.close()
		}
		h, found, err := scanner.greatestBelow(ctx, f.copy, f.tp, from, to)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			f.note += fmt.Sprintf(" (reading the copy's mirror headers below it: %v)", err)
			continue
		}
		if !found {
			continue
		}
		noSync := f.syncTarget < 0
		*f = f.place(h+1, rewind)
		if noSync && f.info == "" {
			f.info = fmt.Sprintf("%s: no offset sync at or below copy offset %d: failed back to %d by the mirror headers of the copy's records below it",
				f.where(), f.at, f.offset)
		}
	}
	return nil
}

// greatestBelow is the greatest source offset of src that the mirror
// headers of copy partition tp's records from offset from up to to name;
// found false when none does.
func (h *headerScanner) greatestBelow(ctx context.Context, tp, src client.TopicPartition, from, to int64) (int64, bool, error) {
	h.cons.Assign([]client.TopicPartition{tp}, from)
	defer h.cons.Unassign([]client.TopicPartition{tp})
	greatest, found := int64(-1), false
	err := h.readCopies(ctx, tp, src, from, to, func(_, s int64, copied bool) error {
		if copied && s > greatest {
			greatest, found = s, true
		}
		return nil
	})
	if err != nil {
		return 0, false, err
	}
	return greatest, found, nil
}
