package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"paymentlog/client"
	"paymentlog/node/metadata"
	"paymentlog/wire"
)

// topicReassignCommand is `paymentlog topic reassign` (Kafka's
// kafka-reassign-partitions): it moves partitions onto other brokers, for
// example off a broker that is being retired or that died for good.
func topicReassignCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "reassign",
		Usage: "move a topic's partitions onto other brokers, and wait until they are copied",
		UsageText: "paymentlog topic reassign NAME --partition N --replicas 4,2,3\n" +
			"   paymentlog topic reassign NAME --replace 1=4 [--partition N]\n" +
			"   paymentlog topic reassign NAME --drain 1 [--partition N]\n" +
			"   paymentlog topic reassign NAME --partition N --cancel\n" +
			"   paymentlog topic reassign NAME --replication-factor 4\n" +
			"   paymentlog topic reassign NAME[,NAME...] --generate --brokers 1,2,4 > plan.json\n" +
			"   paymentlog topic reassign --plan plan.json [--rollback-file FILE] [--verify | --cancel]\n\n" +
			"--replicas gives a partition's new replicas in preference order (the first is its preferred\n" +
			"leader), as many as the topic's replication factor. --replace OLD=NEW puts broker NEW in\n" +
			"OLD's place in every partition of the topic that OLD holds (or only in --partition N).\n" +
			"--drain OLD does the same with, for each partition, the alive broker outside it that holds\n" +
			"the fewest of the topic's replicas (to retire a broker without a replacement; with racks,\n" +
			"one in a rack none of the partition's other replicas is in comes first).\n" +
			"The new replicas copy the log from the partition's leader while the old ones stay in sync\n" +
			"and the partition keeps taking writes; once every new replica is in sync, the old ones\n" +
			"leave and delete their copies, and leadership moves if the leader was one of them.\n" +
			"The command waits for that (--no-wait returns once the move has started; `topic describe`\n" +
			"shows moves under way). --cancel undoes a move in progress: the added replicas leave.\n" +
			"--replication-factor N gives every partition N replicas (and partitions added later): raising\n" +
			"it adds the alive brokers holding the fewest of the topic's replicas at the end of each\n" +
			"partition's preference order; lowering it removes replicas on brokers that are not alive,\n" +
			"then out of sync, then the last in preference order, never the leader. Lower\n" +
			"min.insync.replicas (topic alter-config) first to go below it.\n" +
			"--plan FILE executes Kafka's reassignment JSON ({\"version\":1,\"partitions\":[{\"topic\":\"t\",\n" +
			"\"partition\":0,\"replicas\":[4,2,3]},...]}) over any number of topics: it first prints the\n" +
			"current assignment of those partitions as a plan (keep it to roll back; --rollback-file also\n" +
			"writes it), changes a topic's replication factor when the plan gives all its partitions another\n" +
			"count, and waits for every partition. --verify says per partition whether it is done, --cancel\n" +
			"undoes the moves still under way. --generate prints a plan spreading the topics round-robin\n" +
			"over --brokers (and their current assignment to stderr). --throttle N sets the cluster's\n" +
			"reassignment.throttle.bytes for the moves and removes it once they are done.",
		Flags: withFlags(clientFlags(), []ucli.Flag{
			&ucli.IntFlag{Name: "partition", Value: -1, Usage: "the partition to move (required with --replicas and --cancel)", EnvVars: envVar("TOPIC_REASSIGN_PARTITION")},
			&ucli.StringFlag{Name: "replicas", Usage: "the new replicas, comma-separated broker ids in preference order", EnvVars: envVar("TOPIC_REASSIGN_REPLICAS")},
			&ucli.StringFlag{Name: "replace", Usage: "OLD=NEW: broker NEW takes broker OLD's replicas", EnvVars: envVar("TOPIC_REASSIGN_REPLACE")},
			&ucli.IntFlag{Name: "drain", Usage: "move broker OLD's replicas to the other alive brokers, evenly", EnvVars: envVar("TOPIC_REASSIGN_DRAIN")},
			&ucli.BoolFlag{Name: "cancel", Usage: "undo the partition's move in progress", EnvVars: envVar("TOPIC_REASSIGN_CANCEL")},
			&ucli.IntFlag{Name: "replication-factor", Usage: "give every partition this many replicas", EnvVars: envVar("TOPIC_REASSIGN_REPLICATION_FACTOR")},
			&ucli.StringFlag{Name: "plan", Usage: "a reassignment plan (Kafka's reassignment JSON) to execute, --verify or --cancel", EnvVars: envVar("TOPIC_REASSIGN_PLAN")},
			&ucli.StringFlag{Name: "rollback-file", Usage: "with --plan: also write the current assignment to this new file", EnvVars: envVar("TOPIC_REASSIGN_ROLLBACK_FILE")},
			&ucli.BoolFlag{Name: "verify", Usage: "with --plan: say whether each partition is where the plan puts it", EnvVars: envVar("TOPIC_REASSIGN_VERIFY")},
			&ucli.BoolFlag{Name: "generate", Usage: "print the topics' current assignment and one over --brokers, as plans", EnvVars: envVar("TOPIC_REASSIGN_GENERATE")},
			&ucli.StringFlag{Name: "brokers", Usage: "with --generate: the brokers to spread the topics over", EnvVars: envVar("TOPIC_REASSIGN_BROKERS")},
			&ucli.BoolFlag{Name: "no-wait", Usage: "return once the move has started", EnvVars: envVar("TOPIC_REASSIGN_NO_WAIT")},
			&ucli.Int64Flag{Name: "throttle", Usage: "bytes per second each node may copy for the moves (the cluster's reassignment.throttle.bytes, set before they start and removed once they are done)", EnvVars: envVar("TOPIC_REASSIGN_THROTTLE")},
			timeoutFlag("TOPIC_REASSIGN_TIMEOUT", time.Hour),
		}),
		Action: func(c *ucli.Context) error {
			opts, err := parseTopicReassign(c)
			if err != nil {
				return err
			}
			return runTopicReassign(c.Context, opts, c.App.Writer, c.App.ErrWriter)
		},
	}
}

// topicReassignOptions are the flags of `paymentlog topic reassign`.
type topicReassignOptions struct {
	client    clientOptions
	name      string
	partition int32 // -1: every partition (--replace only)
	replicas  []int32
	old, new  int32 // --replace; --drain: new is 0
	rf        int32 // --replication-factor
	cancel    bool
	// --plan, --generate
	plan             *plan
	rollbackFile     string
	verify, generate bool
	topics           []string // --generate: the topics named
	brokers          []int32  // --generate
	throttle         int64    // --throttle; -1: not given
	noWait           bool
	timeout          time.Duration
}

func parseTopicReassign(c *ucli.Context) (topicReassignOptions, error) {
	o, err := parseTopicReassignModes(c)
	if err != nil {
		return o, err
	}
	o.throttle = -1
	if c.IsSet("throttle") {
		if o.generate || o.verify || o.cancel {
			return o, usageError("--throttle goes with a move, not with --generate, --verify or --cancel")
		}
		if o.throttle = c.Int64("throttle"); o.throttle < 0 {
			return o, usageError("--throttle wants bytes per second, 0 or more (0: unlimited), not %d", o.throttle)
		}
	}
	return o, nil
}

func parseTopicReassignModes(c *ucli.Context) (topicReassignOptions, error) {
	if c.IsSet("plan") {
		return parsePlanOptions(c)
	}
	for _, f := range []string{"verify", "rollback-file"} {
		if c.IsSet(f) {
			return topicReassignOptions{}, usageError("--%s goes with --plan", f)
		}
	}
	name, err := oneArg(c, "topic name")
	if err != nil {
		return topicReassignOptions{}, err
	}
	co, err := parseClientOptions(c)
	if err != nil {
		return topicReassignOptions{}, usageError("%v", err)
	}
	if c.IsSet("generate") || c.IsSet("brokers") {
		return parseGenerateOptions(c, co, name)
	}
	o := topicReassignOptions{client: co, name: name, cancel: c.Bool("cancel"), noWait: c.Bool("no-wait"),
		timeout: c.Duration("timeout"), partition: -1}
	if p := c.Int("partition"); c.IsSet("partition") {
		if p < 0 || p > 1<<31-1 {
			return o, usageError("--partition must be 0 or more")
		}
		o.partition = int32(p)
	}
	modes := 0
	for _, f := range []string{"replicas", "replace", "drain", "cancel", "replication-factor"} {
		if c.IsSet(f) {
			modes++
		}
	}
	if modes != 1 {
		return o, usageError("topic reassign %s: give exactly one of --replicas, --replace, --drain, --cancel and --replication-factor", name)
	}
	switch {
	case c.IsSet("replicas"):
		if o.replicas, err = parseBrokerIDs(c.String("replicas")); err != nil {
			return o, usageError("--replicas: %v", err)
		}
	case c.IsSet("replace"):
		oldS, newS, ok := strings.Cut(c.String("replace"), "=")
		ids, err := parseBrokerIDs(oldS + "," + newS)
		if !ok || err != nil || ids[0] == ids[1] {
			return o, usageError("--replace wants OLD=NEW, two different broker ids, not %q", c.String("replace"))
		}
		o.old, o.new = ids[0], ids[1]
	case c.IsSet("drain"):
		d := c.Int("drain")
		if d <= 0 || d > 1<<31-1 {
			return o, usageError("--drain wants a broker id, not %d", d)
		}
		o.old = int32(d)
	case c.IsSet("replication-factor"):
		rf := c.Int("replication-factor")
		if rf < 1 || rf > 16 {
			return o, usageError("--replication-factor must be 1-16, not %d", rf)
		}
		if o.partition >= 0 {
			return o, usageError("topic reassign %s: --replication-factor applies to every partition; leave out --partition", name)
		}
		o.rf = int32(rf)
	}
	if (c.IsSet("replicas") || o.cancel) && o.partition < 0 {
		return o, usageError("topic reassign %s: --partition is required with --replicas and --cancel", name)
	}
	return o, nil
}

// parsePlanOptions parses --plan FILE [--rollback-file F] [--verify |
// --cancel] [--no-wait] (no topic name, no other mode).
func parsePlanOptions(c *ucli.Context) (topicReassignOptions, error) {
	co, err := parseClientOptions(c)
	if err != nil {
		return topicReassignOptions{}, usageError("%v", err)
	}
	o := topicReassignOptions{client: co, partition: -1, cancel: c.Bool("cancel"), verify: c.Bool("verify"),
		noWait: c.Bool("no-wait"), timeout: c.Duration("timeout"), rollbackFile: c.String("rollback-file")}
	if c.NArg() > 0 {
		return o, usageError("topic reassign --plan: the plan names the topics; got arguments %s", strings.Join(c.Args().Slice(), " "))
	}
	for _, f := range []string{"replicas", "replace", "drain", "replication-factor", "partition", "generate", "brokers"} {
		if c.IsSet(f) {
			return o, usageError("topic reassign --plan: --%s does not go with --plan", f)
		}
	}
	if o.cancel && o.verify {
		return o, usageError("topic reassign --plan: give at most one of --verify and --cancel")
	}
	if o.rollbackFile != "" && (o.cancel || o.verify) {
		return o, usageError("topic reassign --plan: --rollback-file goes with executing a plan, not with --verify or --cancel")
	}
	p, err := readPlan(c.String("plan"))
	if err != nil {
		return o, usageError("--plan: %v", err)
	}
	o.plan = &p
	return o, nil
}

// parseGenerateOptions parses NAME[,NAME...] --generate --brokers 1,2,3.
func parseGenerateOptions(c *ucli.Context, co clientOptions, names string) (topicReassignOptions, error) {
	o := topicReassignOptions{client: co, partition: -1, generate: true, timeout: c.Duration("timeout")}
	if !c.IsSet("generate") || !c.IsSet("brokers") {
		return o, usageError("topic reassign: --generate and --brokers go together")
	}
	for _, f := range []string{"replicas", "replace", "drain", "replication-factor", "partition", "cancel", "no-wait"} {
		if c.IsSet(f) {
			return o, usageError("topic reassign --generate: --%s does not go with --generate", f)
		}
	}
	var err error
	if o.brokers, err = parseBrokerIDs(c.String("brokers")); err != nil {
		return o, usageError("--brokers: %v", err)
	}
	for i, b := range o.brokers {
		if slices.Contains(o.brokers[:i], b) {
			return o, usageError("--brokers: broker %d listed twice", b)
		}
	}
	for _, n := range strings.Split(names, ",") {
		if n = strings.TrimSpace(n); n != "" && !slices.Contains(o.topics, n) {
			o.topics = append(o.topics, n)
		}
	}
	return o, nil
}

// parseBrokerIDs parses "4,2,3".
func parseBrokerIDs(s string) ([]int32, error) {
	var out []int32
	for _, f := range strings.Split(s, ",") {
		id, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
		if err != nil || id <= 0 {
			return nil, fmt.Errorf("%q is not a broker id", f)
		}
		out = append(out, int32(id))
	}
	return out, nil
}

func runTopicReassign(ctx context.Context, opts topicReassignOptions, stdout, stderr io.Writer) error {
	return withAdmin(ctx, opts.client, opts.timeout, stderr, func(ctx context.Context, a *client.Admin) error {
		if opts.throttle < 0 {
			return reassign(ctx, a, opts, stdout, stderr)
		}
		return withThrottle(ctx, a, opts, stdout, func() error { return reassign(ctx, a, opts, stdout, stderr) })
	})
}

// withThrottle is --throttle: the cluster's reassignment throttle is set
// before the moves start and, once they are done, removed unless it was
// changed meanwhile; with --no-wait it stays (the output says how to
// remove it).
func withThrottle(ctx context.Context, a *client.Admin, opts topicReassignOptions, stdout io.Writer, moves func() error) error {
	val := strconv.FormatInt(opts.throttle, 10)
	set := client.ConfigChange{Set: map[string]string{throttleKey: val}}
	if err := a.AlterClusterConfigs(ctx, set); err != nil {
		return fmt.Errorf("set the reassignment throttle: %w", err)
	}
	fmt.Fprintf(stdout, "reassignment throttle: %s bytes/s on every node\n", val)
	if err := moves(); err != nil {
		return err
	}
	if opts.noWait {
		fmt.Fprintf(stdout, "the throttle stays until: paymentlog cluster alter-config --delete %s\n", throttleKey)
		return nil
	}
	st, err := a.DescribeCluster(ctx)
	if err != nil || st.Configs[throttleKey] != val {
		return err // changed by someone else meanwhile: theirs now
	}
	if err := a.AlterClusterConfigs(ctx, client.ConfigChange{Delete: []string{throttleKey}}); err != nil {
		return fmt.Errorf("remove the reassignment throttle: %w", err)
	}
	fmt.Fprintln(stdout, "reassignment throttle removed")
	return nil
}

// throttleKey is the cluster config --throttle sets.
const throttleKey = "reassignment.throttle.bytes"

// reassign runs the mode the options name.
func reassign(ctx context.Context, a *client.Admin, opts topicReassignOptions, stdout, stderr io.Writer) error {
	switch {
	case opts.generate:
		return runGeneratePlan(ctx, a, opts, stdout, stderr)
	case opts.plan != nil && opts.verify:
		return runVerifyPlan(ctx, a, *opts.plan, stdout)
	case opts.plan != nil && opts.cancel:
		return runCancelPlan(ctx, a, *opts.plan, stdout)
	case opts.plan != nil:
		return runExecutePlan(ctx, a, opts, *opts.plan, stdout)
	}
	d, err := a.DescribeTopic(ctx, opts.name)
	if err != nil {
		return fmt.Errorf("reassign %s: %w", opts.name, err)
	}
	if opts.rf > 0 {
		return changeReplicationFactor(ctx, a, opts, d, stdout)
	}
	if opts.cancel {
		if err := a.CancelReassignment(ctx, opts.name, opts.partition); err != nil {
			return fmt.Errorf("cancel the reassignment of %s-%d: %w", opts.name, opts.partition, err)
		}
		fmt.Fprintf(stdout, "%s-%d: reassignment cancelled\n", opts.name, opts.partition)
		return waitReassigned(ctx, a, opts, opts.name, []int32{opts.partition}, stdout)
	}
	var alive []int32
	var racks map[int32]string
	if opts.replicas == nil && opts.new == 0 { // --drain
		st, err := a.DescribeCluster(ctx)
		if err != nil {
			return fmt.Errorf("reassign %s: %w", opts.name, err)
		}
		rack := map[int32]string{}
		var all []int32
		for _, n := range st.Nodes {
			if n.State == "alive" {
				alive = append(alive, n.ID)
			}
			rack[n.ID] = n.Rack
			all = append(all, n.ID)
		}
		racks = metadata.RackKeys(all, func(id int32) string { return rack[id] })
	}
	moves, err := planMoves(d, opts, alive, racks)
	if err != nil {
		return err
	}
	for _, m := range moves {
		if err := a.ReassignPartition(ctx, opts.name, m.partition, m.target); err != nil {
			return fmt.Errorf("reassign %s-%d to %s: %w", opts.name, m.partition, joinIDs(m.target), err)
		}
		fmt.Fprintf(stdout, "%s-%d: replicas %s -> %s\n", opts.name, m.partition, joinIDs(m.from), joinIDs(m.target))
	}
	parts := make([]int32, len(moves))
	for i, m := range moves {
		parts[i] = m.partition
	}
	return waitReassigned(ctx, a, opts, opts.name, parts, stdout)
}

// changeReplicationFactor is --replication-factor: it asks for the change,
// then waits until every partition has that many replicas in sync.
func changeReplicationFactor(ctx context.Context, a *client.Admin, opts topicReassignOptions, d client.TopicDescription, stdout io.Writer) error {
	if err := a.AlterReplicationFactor(ctx, opts.name, opts.rf); err != nil {
		return fmt.Errorf("change the replication factor of %s to %d: %w", opts.name, opts.rf, err)
	}
	fmt.Fprintf(stdout, "%s: replication factor %d -> %d: every partition's replicas are being changed\n",
		opts.name, d.ReplicationFactor, opts.rf)
	if opts.noWait {
		return nil
	}
	err := a.WaitReplicationFactor(ctx, opts.name, opts.rf, func(done, total int) {
		fmt.Fprintf(stdout, "%s: %d of %d partitions have %d replicas in place\n", opts.name, done, total, opts.rf)
	})
	if err != nil {
		return fmt.Errorf("wait for %s's partitions to have %d replicas: %w", opts.name, opts.rf, err)
	}
	after, err := a.DescribeTopic(ctx, opts.name)
	if err != nil {
		return err
	}
	for _, p := range after.Partitions {
		fmt.Fprintf(stdout, "%s-%d: done: replicas %s, in sync %s, leader %d\n", opts.name, p.Partition,
			joinIDs(p.Replicas), joinIDs(p.ISR), p.Leader)
	}
	return nil
}

type move struct {
	partition    int32
	from, target []int32
}

// planMoves turns the options into one target per partition to move;
// alive are the alive brokers and racks every broker's failure domain (nil:
// no racks; metadata.RackKeys), for --drain.
func planMoves(d client.TopicDescription, opts topicReassignOptions, alive []int32, racks map[int32]string) ([]move, error) {
	var out []move
	held := map[int32]int{} // --drain: the topic's replicas per broker, as planned so far
	for _, p := range d.Partitions {
		for _, r := range p.Replicas {
			if !slices.Contains(p.RemovingReplicas, r) {
				held[r]++
			}
		}
	}
	for _, p := range d.Partitions {
		if opts.partition >= 0 && p.Partition != opts.partition {
			continue
		}
		cur := target(p)
		if opts.replicas != nil {
			out = append(out, move{p.Partition, cur, opts.replicas})
			continue
		}
		i := slices.Index(cur, opts.old)
		if i < 0 {
			continue
		}
		to := opts.new
		if to == 0 { // --drain: the alive broker outside the partition holding the fewest
			// With racks, one in a rack none of the partition's other
			// replicas is in comes first.
			newRack := func(b int32) bool {
				return racks != nil && !slices.ContainsFunc(cur, func(r int32) bool { return r != opts.old && racks[r] == racks[b] })
			}
			better := func(b int32) bool {
				if nb, nt := newRack(b), newRack(to); nb != nt {
					return nb
				}
				return held[b] < held[to]
			}
			for _, b := range alive {
				if b != opts.old && !slices.Contains(cur, b) && (to == 0 || better(b)) {
					to = b
				}
			}
			if to == 0 {
				return nil, fmt.Errorf("reassign %s-%d: no alive broker outside its replicas %s to move broker %d's replica to",
					d.Name, p.Partition, joinIDs(cur), opts.old)
			}
			held[to]++
			held[opts.old]--
		}
		if slices.Contains(cur, to) {
			return nil, fmt.Errorf("reassign %s-%d: broker %d already holds a replica (replicas %s)", d.Name, p.Partition, to, joinIDs(cur))
		}
		target := slices.Clone(cur)
		target[i] = to
		out = append(out, move{p.Partition, cur, target})
	}
	if len(out) == 0 {
		if opts.partition >= 0 && opts.replicas == nil {
			return nil, fmt.Errorf("reassign %s-%d: broker %d holds no replica of it", d.Name, opts.partition, opts.old)
		}
		if opts.partition >= 0 {
			return nil, fmt.Errorf("reassign %s-%d: %w", d.Name, opts.partition, wire.UnknownTopicOrPartition.Err("no such partition"))
		}
		return nil, fmt.Errorf("reassign %s: broker %d holds no replica of it", d.Name, opts.old)
	}
	return out, nil
}

// waitReassigned waits until no partition in parts of topic is being
// moved, saying so for each; nothing with --no-wait.
func waitReassigned(ctx context.Context, a *client.Admin, opts topicReassignOptions, topic string, parts []int32, stdout io.Writer) error {
	if opts.noWait {
		return nil
	}
	for _, p := range parts {
		var last wire.PartitionMetadata
		err := a.WaitReassignment(ctx, topic, p, func(m wire.PartitionMetadata) { last = m })
		if err != nil {
			return fmt.Errorf("wait for the reassignment of %s-%d (replicas %s, in sync %s): %w",
				topic, p, joinIDs(last.Replicas), joinIDs(last.ISR), err)
		}
		fmt.Fprintf(stdout, "%s-%d: done: replicas %s, in sync %s, leader %d\n", topic, p,
			joinIDs(last.Replicas), joinIDs(last.ISR), last.Leader)
	}
	return nil
}

// replicasText is a partition's REPLICAS column: its replicas, and what a
// reassignment in progress adds and removes.
func replicasText(p client.PartitionInfo) string {
	s := joinIDs(p.Replicas)
	if len(p.AddingReplicas) > 0 || len(p.RemovingReplicas) > 0 {
		s += fmt.Sprintf(" (adding %s, removing %s)", joinIDs(p.AddingReplicas), joinIDs(p.RemovingReplicas))
	}
	return s
}
