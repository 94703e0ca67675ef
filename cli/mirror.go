package cli

import (
	"slices"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"paymentlog/client"
	"paymentlog/wire"
)

func init() { commands = append(commands, mirrorCommand) }

// defaultMirrorGroup is mirror --group's default.
const defaultMirrorGroup = "paymentlog-mirror"

func mirrorCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "mirror",
		Usage: "copy topics from a source cluster to this one, continuously (Kafka's MirrorMaker)",
		UsageText: "paymentlog mirror --source-bootstrap HOST:PORT,... (--topics A,B | --topic-pattern REGEXP) [--group G]\n" +
			"    [--exit-at-end] [--commit-interval 5s] [--replication-factor N] [--min-insync-replicas N]\n" +
			"    [--source-offset-header=false] [--skip-mirrored] [--sync-group-offsets G1,G2 | --sync-group-pattern REGEXP]\n" +
			"    [--offset-syncs-topic NAME] [--replication-policy identity|prefix --source-alias A [--target-alias B]]\n" +
			"   paymentlog mirror translate-offsets --source-bootstrap HOST:PORT,... GROUP [--execute] [--export]\n" +
			"   paymentlog mirror failback-offsets --source-bootstrap HOST:PORT,... GROUP [--execute] [--export]\n\n" +
			"Reads the topics from the source cluster (--source-bootstrap, --source-tls-dir,\n" +
			"--source-cert-name) as a member of consumer group G on the source, and writes every record\n" +
			"to the same partition number of its copy on the target cluster (--bootstrap, --tls-dir,\n" +
			"--cert-name), with its key, value, headers and timestamp, through an idempotent acks=all\n" +
			"producer that keeps each partition's order. A topic missing on the target is created with\n" +
			"the source's partition count and configs (not message.timestamp.before/after.max.ms: the\n" +
			"records keep their source timestamps), the source's replication factor and min ISR capped\n" +
			"at the target's alive brokers unless --replication-factor and --min-insync-replicas say;\n" +
			"one with fewer partitions is grown; one with more, or another cleanup.policy, is refused.\n" +
			"Partitions and (with --topic-pattern, anchored) topics added on the source are mirrored\n" +
			"within a group heartbeat (1s).\n\n" +
			"At least once: G's offset of a partition is committed on the source only below records the\n" +
			"target acknowledged, every --commit-interval, when the group hands the partition to\n" +
			"another mirror process of G (after its records in flight are acknowledged), and at exit\n" +
			"(Ctrl-C, SIGTERM, --exit-at-end). A mirror that is killed writes the records after its\n" +
			"last commit again when it (or another process of G) resumes. Each record gets a header\n" +
			mirrorHeader + "=TOPIC/PARTITION/OFFSET naming its source position (an earlier one is\n" +
			"replaced), by which consumers of the target drop duplicates. --skip-mirrored leaves out\n" +
			"records that already carry that header (for two clusters mirroring each other).\n\n" +
			"The copy of topic T has T's name (--replication-policy identity, the default), or A.T\n" +
			"(--replication-policy prefix --source-alias A, MirrorMaker 2's default: eu1.payments), the\n" +
			"name everything the mirror maps (topics, offset syncs, groups' offsets) follows; with\n" +
			"--target-alias B, a source topic whose name says it came from B (B.T, A.B.T) is not mirrored\n" +
			"back: two clusters mirror each other without a loop and without mixing their records.\n\n" +
			"Every --commit-interval, and at exit, one line on stderr: records and bytes mirrored,\n" +
			"partitions owned, and the largest lag (source high watermark minus committed offset).\n\n" +
			"Offset syncs: as it goes the mirror writes, to the compacted topic --offset-syncs-topic on the\n" +
			"target, a sparse map of source offsets to target offsets per partition (every 1000 records,\n" +
			"every --commit-interval, and where the offset delta changes). With --sync-group-offsets (or\n" +
			"--sync-group-pattern), every --commit-interval and at exit, the source groups' committed\n" +
			"offsets of the partitions this process owns are translated by it and committed for the same\n" +
			"group on the target: conservatively (a consumer there may see a few records again, never\n" +
			"misses one), never while the group has members on the target, never below the target\n" +
			"group's own offset, never the mirror's own --group. translate-offsets does it on demand.",
		Subcommands: []*ucli.Command{mirrorTranslateCommand(), mirrorFailbackCommand()},
		Flags: withFlags(clientFlags(), sourceClientFlags(), []ucli.Flag{
			&ucli.StringFlag{Name: "topics", Usage: "the topics to mirror (A,B,...); or --topic-pattern", EnvVars: envVar("MIRROR_TOPICS")},
			&ucli.StringFlag{Name: "topic-pattern", Usage: "mirror every topic whose whole name matches this regular expression (Go RE2), including topics created later; or --topics", EnvVars: envVar("MIRROR_TOPIC_PATTERN")},
			&ucli.StringFlag{Name: "group", Value: defaultMirrorGroup, Usage: "consumer group on the source whose committed offsets say where mirroring resumes; mirror processes with one group share the partitions", EnvVars: envVar("MIRROR_GROUP")},
			&ucli.IntFlag{Name: "replication-factor", Usage: "replication factor of topics created on the target (0: the source topic's, at most the target's alive brokers)", EnvVars: envVar("MIRROR_REPLICATION_FACTOR")},
			&ucli.IntFlag{Name: "min-insync-replicas", Usage: "min ISR of topics created on the target (0: the source topic's, at most their replication factor)", EnvVars: envVar("MIRROR_MIN_INSYNC_REPLICAS")},
			&ucli.BoolFlag{Name: "source-offset-header", Value: true, Usage: "give each record a header " + mirrorHeader + "=TOPIC/PARTITION/OFFSET (its source position)", EnvVars: envVar("MIRROR_SOURCE_OFFSET_HEADER")},
			&ucli.BoolFlag{Name: "skip-mirrored", Usage: "leave out records that already carry the " + mirrorHeader + " header (mirrored there from elsewhere): a loop guard for clusters mirroring each other", EnvVars: envVar("MIRROR_SKIP_MIRRORED")},
			&ucli.BoolFlag{Name: "exit-at-end", Usage: "exit once every partition is mirrored up to the high watermark it had when this process started it, and committed", EnvVars: envVar("MIRROR_EXIT_AT_END")},
			&ucli.DurationFlag{Name: "commit-interval", Value: defaultCommitInterval, Usage: "commit the source offsets and print progress this often (0: only at exit and hand-over)", EnvVars: envVar("MIRROR_COMMIT_INTERVAL")},
			&ucli.StringFlag{Name: "sync-group-offsets", Usage: "consumer groups (G1,G2,...) whose committed source offsets are translated and committed on the target every --commit-interval (default: none)", EnvVars: envVar("MIRROR_SYNC_GROUP_OFFSETS")},
			&ucli.StringFlag{Name: "sync-group-pattern", Usage: "also sync every source group whose whole name matches this regular expression (Go RE2)", EnvVars: envVar("MIRROR_SYNC_GROUP_PATTERN")},
			offsetSyncsTopicFlag(),
		}, replicationPolicyFlags(true)),
		Action: func(c *ucli.Context) error {
			opts, err := parseMirrorOptions(c)
			if err != nil {
				return err
			}
			return runMirror(c.Context, opts, c.App.ErrWriter)
		},
	}
}

// mirrorOptions are the flags of `paymentlog mirror`.
type mirrorOptions struct {
	target, source clientOptions
	// topics or pattern (exactly one) name the source topics.
	topics  []string
	pattern string
	group   string
	// replicationFactor and minISR of topics created on the target; 0:
	// the source topic's, capped (planTopic).
	replicationFactor, minISR int32
	sourceHeader              bool
	skipMirrored              bool
	exitAtEnd                 bool
	commitInterval            time.Duration // 0: only at hand-over and exit
	// offsetSyncsTopic is the target topic offset syncs are written to
	// (mirror_offset_syncs.go); "": none are.
	offsetSyncsTopic string
	// syncGroups and syncGroupPattern (anchored) name the source groups
	// whose offsets are synced to the target (mirror_group_sync.go);
	// none: no group is.
	syncGroups       []string
	syncGroupPattern string
	// policy names the copies on the target, and the source topics never
	// copied (mirror_policy.go).
	policy replicationPolicy
	hooks  mirrorHooks
}

// offsetSyncsTopicFlag is --offset-syncs-topic, of mirror and
// translate-offsets.
func offsetSyncsTopicFlag() ucli.Flag {
	return &ucli.StringFlag{Name: "offset-syncs-topic", Value: defaultOffsetSyncsTopic,
		Usage: "compacted topic on the target holding the map of source offsets to target offsets (\"\": mirror writes none, and cannot sync groups)", EnvVars: envVar("MIRROR_OFFSET_SYNCS_TOPIC")}
}

// checkOffsetSyncsTopic checks --offset-syncs-topic's value ("" allowed).
func checkOffsetSyncsTopic(name string) error {
	if name == "" {
		return nil
	}
	if why := wire.CheckGroupName(name); why != "" || strings.HasPrefix(name, "__") {
		return usageError("--offset-syncs-topic: %q is not a topic name it can use", name)
	}
	return nil
}

// syncsGroups reports whether the run syncs any group's offsets.
func (o mirrorOptions) syncsGroups() bool { return len(o.syncGroups) > 0 || o.syncGroupPattern != "" }

// mirrorHooks let tests act inside a run.
type mirrorHooks struct {
	// afterForward is called after each record handed to the producer,
	// with the number handed over so far; true makes the run stop as a
	// killed process would: nothing more is committed (the records in
	// flight are still delivered, as a crash may let them be).
	afterForward func(forwarded int) (crash bool)
	// polled is called after each poll with the partitions the member's
	// consumer fetches.
	polled func(fetching []client.TopicPartition)
}

func parseMirrorOptions(c *ucli.Context) (mirrorOptions, error) {
	if c.NArg() > 0 {
		return mirrorOptions{}, usageError("mirror takes no arguments, got %s (topics go in --topics)", strings.Join(c.Args().Slice(), " "))
	}
	target, err := parseClientOptions(c)
	if err != nil {
		return mirrorOptions{}, usageError("%v", err)
	}
	o := mirrorOptions{target: target, source: target, pattern: c.String("topic-pattern"), group: c.String("group"),
		replicationFactor: int32(c.Int("replication-factor")), minISR: int32(c.Int("min-insync-replicas")),
		sourceHeader: c.Bool("source-offset-header"), skipMirrored: c.Bool("skip-mirrored"), exitAtEnd: c.Bool("exit-at-end"),
		commitInterval: c.Duration("commit-interval"), offsetSyncsTopic: c.String("offset-syncs-topic"),
		syncGroupPattern: c.String("sync-group-pattern")}
	if o.source, err = parseSourceClient(c, target); err != nil {
		return o, err
	}
	if o.policy, err = parseReplicationPolicy(c); err != nil {
		return o, err
	}
	for _, t := range strings.Split(c.String("topics"), ",") {
		if t = strings.TrimSpace(t); t != "" && !slices.Contains(o.topics, t) {
			o.topics = append(o.topics, t)
		}
	}
	switch {
	case len(o.topics) > 0 && o.pattern != "":
		return o, usageError("--topics and --topic-pattern: give one or the other")
	case len(o.topics) == 0 && o.pattern == "":
		return o, usageError("no topics to mirror: give --topics A,B or --topic-pattern REGEXP")
	case len(o.topics) > wire.MaxGroupTopics:
		return o, usageError("--topics: %d topics, at most %d (use --topic-pattern)", len(o.topics), wire.MaxGroupTopics)
	case len(o.pattern) > wire.MaxTopicPatternLen:
		return o, usageError("--topic-pattern: longer than %d bytes", wire.MaxTopicPatternLen)
	}
	for _, t := range o.topics {
		if why := wire.CheckGroupName(t); why != "" || strings.HasPrefix(t, "__") {
			return o, usageError("--topics: %q is not a topic name that can be mirrored", t)
		}
		if o.policy.isCycle(t) {
			return o, usageError("--topics: %s is a copy of a topic of the target (--target-alias %s): mirroring it back would loop", t, o.policy.targetAlias)
		}
		if why := o.policy.checkTarget(t); why != "" {
			return o, usageError("--topics: %s: %s", t, why)
		}
	}
	if o.pattern != "" {
		if _, err := wire.TopicPatternRegexp(o.pattern); err != nil {
			return o, usageError("--topic-pattern: %q is not a regular expression: %v", o.pattern, err)
		}
	}
	if why := wire.CheckGroupName(o.group); why != "" {
		return o, usageError("--group: %s", why)
	}
	if err := checkOffsetSyncsTopic(o.offsetSyncsTopic); err != nil {
		return o, err
	}
	if slices.Contains(o.topics, o.offsetSyncsTopic) || slices.Contains(o.topics, defaultOffsetSyncsTopic) {
		return o, usageError("--topics: the offset syncs topic is the mirror's own, not one to mirror")
	}
	for _, g := range strings.Split(c.String("sync-group-offsets"), ",") {
		if g = strings.TrimSpace(g); g == "" || slices.Contains(o.syncGroups, g) {
			continue
		}
		if why := wire.CheckGroupName(g); why != "" {
			return o, usageError("--sync-group-offsets: %s", why)
		}
		if g == o.group {
			return o, usageError("--sync-group-offsets: %s is the mirror's own --group, whose offsets are the source's", g)
		}
		o.syncGroups = append(o.syncGroups, g)
	}
	if o.syncGroupPattern != "" {
		if _, err := wire.TopicPatternRegexp(o.syncGroupPattern); err != nil {
			return o, usageError("--sync-group-pattern: %q is not a regular expression: %v", o.syncGroupPattern, err)
		}
	}
	if o.syncsGroups() && o.offsetSyncsTopic == "" {
		return o, usageError("--sync-group-offsets and --sync-group-pattern translate by the offset syncs: --offset-syncs-topic cannot be empty")
	}
	switch {
	case o.replicationFactor < 0:
		return o, usageError("--replication-factor must be >= 0 (0: the source topic's)")
	case o.minISR < 0:
		return o, usageError("--min-insync-replicas must be >= 0 (0: the source topic's)")
	case o.replicationFactor > 0 && o.minISR > o.replicationFactor:
		return o, usageError("--min-insync-replicas %d is above --replication-factor %d", o.minISR, o.replicationFactor)
	case o.commitInterval < 0:
		return o, usageError("--commit-interval must be >= 0 (0: commit only at hand-over and exit)")
	}
	return o, nil
}

// sourceClientFlags are the flags naming the source cluster.
func sourceClientFlags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.StringFlag{Name: "source-bootstrap", Usage: "source cluster nodes to contact first (host:port,...); required", EnvVars: envVar("MIRROR_SOURCE_BOOTSTRAP")},
		&ucli.StringFlag{Name: "source-tls-dir", Usage: "directory with the source cluster's ca.crt and the client certificate (mutual TLS); empty: dev mode, no verification", EnvVars: envVar("MIRROR_SOURCE_TLS_DIR")},
		&ucli.StringFlag{Name: "source-cert-name", Value: client.DefaultCertName, Usage: "certificate name in --source-tls-dir", EnvVars: envVar("MIRROR_SOURCE_CERT_NAME")},
	}
}

// parseSourceClient reads sourceClientFlags: the target's options with the
// source's bootstrap and TLS, which must name another cluster.
func parseSourceClient(c *ucli.Context, target clientOptions) (clientOptions, error) {
	src := target
	src.bootstrap = client.ParseBootstrap(c.String("source-bootstrap"))
	src.tlsDir, src.certName = c.String("source-tls-dir"), c.String("source-cert-name")
	if len(src.bootstrap) == 0 {
		return src, usageError("--source-bootstrap: required (the cluster to copy from)")
	}
	for _, a := range src.bootstrap {
		if !strings.Contains(a, ":") {
			return src, usageError("--source-bootstrap: %q is not host:port", a)
		}
		if slices.Contains(target.bootstrap, a) {
			return src, usageError("--source-bootstrap and --bootstrap both name %s: the source and the target must be different clusters", a)
		}
	}
	return src, nil
}

// mirrorMatches reports whether the mirror copies topic: named by
// --topics, or matched whole by --topic-pattern; never an internal topic
// (a name starting with "__"), an offset syncs topic (a mirror's own, on a
// cluster that another mirror copies from), nor a topic whose name says
// it came from the target (replicationPolicy.isCycle).
func (o mirrorOptions) mirrorMatches(topic string) bool {
	if strings.HasPrefix(topic, "__") || topic == defaultOffsetSyncsTopic || topic == o.offsetSyncsTopic || o.policy.isCycle(topic) {
		return false
	}
	if o.pattern == "" {
		return slices.Contains(o.topics, topic)
	}
	re, err := wire.TopicPatternRegexp(o.pattern)
	return err == nil && re.MatchString(topic)
}
