package cli

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	ucli "github.com/urfave/cli/v2"

	"paymentlog/client"
	"paymentlog/wire"
)

func init() { commands = append(commands, consumeCommand) }

func consumeCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "consume",
		Usage: "print a topic's records",
		UsageText: "paymentlog consume TOPIC [--partition N] [--from beginning|end|OFFSET|TIME] [--exit-at-end|--max N] [--json]\n" +
			"    [--on-truncation fail|rewind] [--group G [--commit-interval 5s] [--group-instance-id ID]]\n\n" +
			"Prints each record's value on its own line, or with --json one line\n" +
			`{"partition":P,"offset":O,"key":K,"value":V,"timestamp":T} per record (key null when absent,` + "\n" +
			`value null for a tombstone;` + "\n" +
			`a key or value that is not UTF-8 also gets "key_base64"/"value_base64"; a timestamp the leader gave` + "\n" +
			`the record, on a topic with message.timestamp.type=LogAppendTime, gets "timestamp_type":"LogAppendTime").` + "\n" +
			`Records come in offset` + "\n" +
			"order within a partition. --exit-at-end stops once every partition is read up to the high\n" +
			"watermark it had when consume started (right after a leader change: once the new leader's\n" +
			"high watermark has caught up with the old one's). Without --exit-at-end or --max, consume\n" +
			"follows the topic until interrupted (exit status 0). Following every partition (no\n" +
			"--partition, no --exit-at-end), it also reads partitions added to the topic meanwhile\n" +
			"(`topic alter --partitions`), from their beginning, within --metadata-max-age (a --group\n" +
			"member: when the group gives them to it, from where --from says).\n\n" +
			"--from TIME starts each partition at its first record stamped at or after TIME (RFC 3339,\n" +
			"e.g. 2026-12-01T09:30:00Z, or @ and Unix milliseconds), at its end where no record is yet:\n" +
			"to replay from just before an incident. Stamps are the producers' (the time of produce\n" +
			"unless the producer set one); the time index finds them without reading the whole log.\n\n" +
			"If a partition's leader no longer has records consume has printed (its log was truncated\n" +
			"below them, after an unclean leader election or records lost under --fsync never), consume\n" +
			"stops with exit status 1 and an error naming the partition, its position and the offset\n" +
			"where the leader's log parts from what was printed (rerun with --from that offset and\n" +
			"--partition to read the leader's records from there). With --on-truncation rewind it\n" +
			"instead says so on stderr and goes on from that offset: records from it on are printed\n" +
			"again as the leader now has them.\n\n" +
			"--group G joins consumer group G as a member: the members of G (consume --group G runs\n" +
			"anywhere, and other clients' group consumers) share the topic's partitions, each read by one\n" +
			"member at a time, and the cluster moves partitions between them as members come and go (a\n" +
			"member killed without leaving loses its partitions after the session timeout, 10s by default).\n" +
			"Each partition starts at G's committed offset; --from only starts the partitions G has none\n" +
			"for. consume commits the offset after the last record it printed on each partition every\n" +
			"--commit-interval, when the group gives one of its partitions to another member (before that\n" +
			"member starts it), and when it exits (--max, --exit-at-end, Ctrl-C or SIGTERM), then leaves\n" +
			"the group: across the members and reruns no record is printed twice and none skipped, except\n" +
			"the records printed since the last commit by a member that was killed (at least once). A\n" +
			"failed commit is reported on stderr; at exit it makes the exit status 1. With --exit-at-end a\n" +
			"member exits once the group gives it at least one partition and nothing more, and it has read\n" +
			"each up to the high watermark the partition had when the member started it.\n\n" +
			"--group-instance-id ID makes the member static (Kafka's group.instance.id; one ID per\n" +
			"process, the same across its restarts): when it exits, its partitions wait one session\n" +
			"timeout for the next consume with the same ID, which gets them back at the committed offsets\n" +
			"instead of their moving to the other members and back. While a member that did not exit\n" +
			"(killed) holds the ID, a new one waits up to 30s for its session to time out.\n\n" +
			"--group G with --partition N does not join: consume reads partition N from G's committed\n" +
			"offset and commits to G as no member, which the cluster refuses while G has members.",
		Flags: withFlags(clientFlags(), []ucli.Flag{
			&ucli.IntFlag{Name: "partition", Value: -1, Usage: "read only this partition (-1: all)", EnvVars: envVar("CONSUME_PARTITION")},
			&ucli.StringFlag{Name: "from", Value: "beginning", Usage: "beginning | end | OFFSET | TIME (for every partition read; with --group only for the partitions the group has no committed offset for: committed offsets win); TIME is RFC 3339 (2026-12-01T09:30:00Z), @UNIX_MS or now-DURATION (now-15m): each partition's first record stamped at or after it, its end where none is yet", EnvVars: envVar("CONSUME_FROM")},
			&ucli.BoolFlag{Name: "exit-at-end", Usage: "exit once caught up with the high watermarks seen at start", EnvVars: envVar("CONSUME_EXIT_AT_END")},
			&ucli.Int64Flag{Name: "max", Usage: "exit after this many records (0: no limit)", EnvVars: envVar("CONSUME_MAX")},
			&ucli.BoolFlag{Name: "json", Usage: "print one JSON object per record", EnvVars: envVar("CONSUME_JSON")},
			&ucli.StringFlag{Name: "on-truncation", Value: "fail", Usage: "when a leader's log parts from records printed: fail | rewind (print from the divergence on)", EnvVars: envVar("CONSUME_ON_TRUNCATION")},
			&ucli.DurationFlag{Name: "max-wait", Value: client.DefaultMaxWait, Usage: "long-poll: how long a leader may hold a fetch with no data", EnvVars: envVar("CONSUME_MAX_WAIT")},
			&ucli.StringFlag{Name: "client-rack", Usage: "this consumer's rack (Kafka's client.rack): read each partition from its in-sync follower in that rack (node start --rack) when there is one, else from its leader", EnvVars: envVar("CONSUME_CLIENT_RACK")},
			&ucli.StringFlag{Name: "group", Usage: "consumer group to join as a member (with --partition: only to read and commit its offsets): the members share the topic's partitions; each starts at the group's committed offset (--from only for partitions without one), and the offsets of the records printed are committed", EnvVars: envVar("CONSUME_GROUP")},
			&ucli.DurationFlag{Name: "commit-interval", Value: defaultCommitInterval, Usage: "with --group: commit this often (0: only at exit)", EnvVars: envVar("CONSUME_COMMIT_INTERVAL")},
			&ucli.StringFlag{Name: "group-instance-id", Usage: "with --group: a static member's id, the same across this consumer's restarts: its partitions wait a session timeout for it when it exits", EnvVars: envVar("CONSUME_GROUP_INSTANCE_ID")},
		}),
		Action: func(c *ucli.Context) error {
			opts, err := parseConsumeOptions(c)
			if err != nil {
				return err
			}
			return runConsume(c.Context, opts, c.App.Writer, c.App.ErrWriter)
		},
	}
}

// consumeOptions are the flags of `paymentlog consume`.
type consumeOptions struct {
	client    clientOptions
	topic     string
	partition int32 // -1: all
	from      int64 // an offset, client.SeekBeginning or client.SeekEnd
	// fromTime, when not zero, replaces from: each partition starts at its
	// first record stamped at or after it (--from TIME).
	fromTime  time.Time
	exitAtEnd bool
	max       int64
	json      bool
	maxWait   time.Duration
	rack      string // --client-rack
	// rewind: on a log truncation go on from the divergence point
	// (--on-truncation rewind) instead of failing.
	rewind bool
	// group, when set, starts partitions at its committed offsets (from
	// and fromTime are the fallback) and commits what is printed every
	// commitInterval (0: only at exit) and at exit; without partition,
	// consume joins it as a member and reads the partitions it gives.
	group          string
	commitInterval time.Duration
	// instance is the member's static instance id (--group-instance-id).
	instance string
}

func parseConsumeOptions(c *ucli.Context) (consumeOptions, error) {
	topic, err := oneArg(c, "topic")
	if err != nil {
		return consumeOptions{}, err
	}
	co, err := parseClientOptions(c)
	if err != nil {
		return consumeOptions{}, usageError("%v", err)
	}
	o := consumeOptions{client: co, topic: topic, partition: int32(c.Int("partition")), exitAtEnd: c.Bool("exit-at-end"),
		max: c.Int64("max"), json: c.Bool("json"), maxWait: c.Duration("max-wait"), rack: c.String("client-rack"),
		group: c.String("group"), commitInterval: c.Duration("commit-interval"), instance: c.String("group-instance-id")}
	if o.from, o.fromTime, err = parseFrom(c.String("from")); err != nil {
		return o, usageError("--from: %v", err)
	}
	switch strings.ToLower(strings.TrimSpace(c.String("on-truncation"))) {
	case "fail":
	case "rewind":
		o.rewind = true
	default:
		return o, usageError("--on-truncation: %q is not fail or rewind", c.String("on-truncation"))
	}
	if o.partition < -1 {
		return o, usageError("--partition must be >= 0 (or -1 for all)")
	}
	if o.max < 0 {
		return o, usageError("--max must be >= 0")
	}
	if c.IsSet("group") && strings.TrimSpace(o.group) == "" {
		return o, usageError("--group: the group name is empty")
	}
	if o.commitInterval < 0 {
		return o, usageError("--commit-interval must be >= 0 (0: commit only at exit)")
	}
	if o.instance != "" {
		switch {
		case o.group == "" || o.partition >= 0:
			return o, usageError("--group-instance-id needs --group without --partition")
		case wire.CheckGroupName(o.instance) != "":
			return o, usageError("--group-instance-id: %s", wire.CheckGroupName(o.instance))
		}
	}
	return o, nil
}

// parseFrom reads --from: beginning, end, an offset, or a time (RFC 3339,
// @ and Unix milliseconds, or now-DURATION), which is returned instead of
// an offset.
func parseFrom(s string) (int64, time.Time, error) {
	s = strings.TrimSpace(s)
	switch strings.ToLower(s) {
	case "beginning", "earliest", "start":
		return client.SeekBeginning, time.Time{}, nil
	case "end", "latest":
		return client.SeekEnd, time.Time{}, nil
	}
	if ago, ok := strings.CutPrefix(strings.ToLower(s), "now"); ok {
		t, err := nowMinus(s, ago)
		return 0, t, err
	}
	if ms, ok := strings.CutPrefix(s, "@"); ok {
		n, err := strconv.ParseInt(ms, 10, 64)
		if err != nil || n < 0 {
			return 0, time.Time{}, fmt.Errorf("%q is not @ and a non-negative number of Unix milliseconds", s)
		}
		return 0, time.UnixMilli(n), nil
	}
	if strings.Contains(s, "T") {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return 0, time.Time{}, fmt.Errorf("%q is not an RFC 3339 time such as 2026-12-01T09:30:00Z: %v", s, err)
		}
		if t.UnixMilli() < 0 {
			return 0, time.Time{}, fmt.Errorf("%q is before 1970", s)
		}
		return 0, t, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, time.Time{}, fmt.Errorf("%q is not beginning, end, a non-negative offset or a time (RFC 3339, @UNIX_MS or now-DURATION)", s)
	}
	return n, time.Time{}, nil
}

// nowMinus reads what follows "now" in a time: nothing (this instant) or
// -DURATION, such as -2h30m (that long ago, by this machine's clock).
func nowMinus(s, ago string) (time.Time, error) {
	if ago == "" {
		return time.Now(), nil
	}
	d, err := time.ParseDuration(strings.TrimPrefix(ago, "-"))
	if !strings.HasPrefix(ago, "-") || err != nil || d <= 0 {
		return time.Time{}, fmt.Errorf("%q is not now or now-DURATION with a positive duration such as now-2h30m", s)
	}
	t := time.Now().Add(-d)
	if t.UnixMilli() < 0 {
		return time.Time{}, fmt.Errorf("%q is before 1970", s)
	}
	return t, nil
}

// runConsume prints records until --max, --exit-at-end or an interrupt:
// as a member of --group (consume_member.go), or from the partitions it
// assigns itself.
func runConsume(ctx context.Context, opts consumeOptions, stdout, stderr io.Writer) (err error) {
	cl, err := opts.client.newClient(ctx, stderr)
	if err != nil {
		return err
	}
	defer closeClient(cl)
	ccfg := consumerConfig(opts, stderr)
	if opts.group != "" && opts.partition < 0 {
		return runConsumeMember(ctx, cl, opts, ccfg, stdout, stderr)
	}
	cons := cl.NewConsumer(ccfg)
	defer cons.Close()
	src, err := assignPartitions(ctx, cl, cons, opts, stderr)
	if err != nil {
		return err
	}
	out := bufio.NewWriterSize(stdout, 1<<20)
	defer out.Flush()
	var gc *groupCommitter // nil without --group
	if opts.group != "" {
		gc = newGroupCommitter(opts)
		gc.cons = cons
		// Runs before the deferred Flush: it flushes itself, and commits
		// only what reached the output.
		defer func() { err = gc.commitAtExit(ctx, out, err, stderr) }()
	}
	return printRecords(ctx, opts, cons, src, gc, out, stderr)
}

// consumerConfig is the Consumer's configuration for opts.
func consumerConfig(opts consumeOptions, stderr io.Writer) client.ConsumerConfig {
	ccfg := client.ConsumerConfig{MaxWait: opts.maxWait, Rack: opts.rack}
	if opts.from < 0 || !opts.fromTime.IsZero() || opts.group != "" {
		// --from beginning, end or a time, or --group: records retention
		// deletes before this consumer (or the group) reaches them are
		// skipped (Kafka's auto.offset.reset=earliest), with a note;
		// without --group, an explicit --from OFFSET below the log start
		// stays an error.
		ccfg.OnOffsetReset = func(tp client.TopicPartition, from, to int64) {
			fmt.Fprintf(stderr, "paymentlog: consume %s: partition %d: offsets %d to %d were deleted by retention; going on from %d\n",
				opts.topic, tp.Partition, from, to-1, to)
		}
	}
	return ccfg
}

// manualSource reads the partitions consume assigned itself: every
// partition of the topic, or --partition.
type manualSource struct {
	opts   consumeOptions
	cons   *client.Consumer
	stderr io.Writer
	// ends are, by partition, the high watermarks at start: the
	// --exit-at-end goal.
	ends []int64
	// follow: following every partition (no --partition, no
	// --exit-at-end), partitions added to the topic meanwhile are found
	// within --metadata-max-age and read from their beginning, whatever
	// --from says (their records were all written after consume started).
	follow bool
}

// assignPartitions assigns the partitions to read, each at --from or, with
// --group, at the group's committed offset, and reads the --exit-at-end
// goals.
func assignPartitions(ctx context.Context, cl *client.Client, cons *client.Consumer, opts consumeOptions, stderr io.Writer) (*manualSource, error) {
	setupCtx, cancel := context.WithTimeout(ctx, defaultAdminTimeout)
	defer cancel()
	n, err := cl.PartitionCount(setupCtx, opts.topic)
	if err != nil {
		return nil, fmt.Errorf("consume %s: %w", opts.topic, err)
	}
	var tps []client.TopicPartition
	for p := int32(0); p < int32(n); p++ {
		if opts.partition < 0 || opts.partition == p {
			tps = append(tps, client.TopicPartition{Topic: opts.topic, Partition: p})
		}
	}
	if len(tps) == 0 {
		return nil, fmt.Errorf("consume %s: topic has %d partitions; no partition %d", opts.topic, n, opts.partition)
	}
	atFrom := tps // the partitions that start at --from
	if opts.group != "" {
		// --from is the fallback: a time is resolved below for the
		// partitions the group has no offset for.
		fallback := opts.from
		if !opts.fromTime.IsZero() {
			fallback = client.SeekEnd
		}
		if atFrom, err = cons.SeekCommitted(setupCtx, opts.group, tps, fallback); err != nil {
			return nil, fmt.Errorf("consume %s: committed offsets of group %s: %w", opts.topic, opts.group, err)
		}
	}
	switch {
	case opts.group == "" && opts.fromTime.IsZero():
		cons.Assign(tps, opts.from)
	case !opts.fromTime.IsZero() && len(atFrom) > 0:
		if err := cons.AssignAtTime(setupCtx, atFrom, opts.fromTime); err != nil {
			return nil, fmt.Errorf("consume %s: offsets for %s: %w", opts.topic, opts.fromTime.UTC().Format(time.RFC3339Nano), err)
		}
	}
	src := &manualSource{opts: opts, cons: cons, stderr: stderr, ends: make([]int64, n), follow: opts.partition < 0 && !opts.exitAtEnd}
	if !opts.exitAtEnd {
		return src, nil
	}
	// --exit-at-end: the high watermarks now are the goal.
	m, err := cons.EndOffsets(setupCtx, tps)
	if err != nil {
		return nil, fmt.Errorf("consume %s: end offsets: %w", opts.topic, err)
	}
	for tp, o := range m {
		src.ends[tp.Partition] = o
	}
	for _, tp := range tps {
		if err := checkNotPastEnd(opts.topic, cons, tp, src.ends[tp.Partition]); err != nil {
			return nil, err
		}
	}
	return src, nil
}

// checkNotPastEnd refuses a position past the partition's end (--from
// OFFSET, or a group's committed offset after the log was truncated): it
// is out of range, as Poll would report it, and without this check the
// partition counted as read to its end and consume exited 0 having read
// nothing.
func checkNotPastEnd(topic string, cons *client.Consumer, tp client.TopicPartition, end int64) error {
	if pos, _ := cons.Position(tp); pos > end {
		return fmt.Errorf("consume %s: partition %d has offsets up to %d; %d is outside them", topic, tp.Partition, end, pos)
	}
	return nil
}

func (s *manualSource) poll(ctx context.Context) ([]client.Message, error) {
	if s.follow {
		for _, tp := range s.cons.AssignNewPartitions(s.opts.topic, client.SeekBeginning) {
			fmt.Fprintf(s.stderr, "paymentlog: consume %s: partition %d was added; reading it from the beginning\n", s.opts.topic, tp.Partition)
		}
	}
	return s.cons.Poll(ctx)
}

func (s *manualSource) pastGoal(m *client.Message) bool {
	return s.opts.exitAtEnd && m.Offset >= s.ends[m.Partition]
}

func (s *manualSource) atEnd() bool {
	if !s.opts.exitAtEnd {
		return false
	}
	for _, tp := range s.cons.Assignment() {
		pos, _ := s.cons.Position(tp)
		if pos < 0 || pos < s.ends[tp.Partition] {
			return false
		}
	}
	return true
}

// appendConsumedJSON formats one record as
// {"partition":P,"offset":O,"key":K,"value":V,"timestamp":T}.
func appendConsumedJSON(b []byte, m *client.Message) []byte {
	b = append(b, `{"partition":`...)
	b = strconv.AppendInt(b, int64(m.Partition), 10)
	b = append(b, `,"offset":`...)
	b = strconv.AppendInt(b, m.Offset, 10)
	b = append(b, `,"key":`...)
	keyValid := true
	if m.Key == nil {
		b = append(b, "null"...)
	} else {
		b, keyValid = appendJSONBytes(b, m.Key)
	}
	b = append(b, `,"value":`...)
	valueValid := true
	if m.Value == nil {
		b = append(b, "null"...) // a tombstone
	} else {
		b, valueValid = appendJSONBytes(b, m.Value)
	}
	b = append(b, `,"timestamp":`...)
	b = strconv.AppendInt(b, m.Timestamp.UnixMilli(), 10)
	if m.LogAppendTime {
		b = append(b, `,"timestamp_type":"LogAppendTime"`...)
	}
	if !keyValid {
		b = append(b, `,"key_base64":"`...)
		b = base64.StdEncoding.AppendEncode(b, m.Key)
		b = append(b, '"')
	}
	if !valueValid {
		b = append(b, `,"value_base64":"`...)
		b = base64.StdEncoding.AppendEncode(b, m.Value)
		b = append(b, '"')
	}
	return append(b, "}\n"...)
}

func appendJSONString(b []byte, s string) []byte {
	b, _ = appendJSONBytes(b, []byte(s))
	return b
}

// jsonPlain marks ASCII bytes that need no escaping in a JSON string.
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// plain8 reports whether none of 8 bytes needs escaping: no byte below
// 0x20, no '"', no '\\', no byte >= 0x80 (SWAR: exact for "any byte matches").
func plain8(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	below20 := (x - ones*0x20) &^ x
	quote := x ^ (ones * '"')
	bslash := x ^ (ones * '\\')
	hasQuote := (quote - ones) &^ quote
	hasBslash := (bslash - ones) &^ bslash
	return (below20|hasQuote|hasBslash|x)&highs == 0
}

// appendJSONBytes appends s as a JSON string and reports whether s was valid
// UTF-8. Invalid bytes become U+FFFD (callers then add the exact bytes in base64).
func appendJSONBytes(b []byte, s []byte) ([]byte, bool) {
	const hex = "0123456789abcdef"
	valid := true
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) && plain8(binary.LittleEndian.Uint64(s[i:])) {
			i += 8
			continue
		}
		if jsonPlain[s[i]] {
			i++
			continue
		}
		c := s[i]
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			valid = false
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"'), valid
}
