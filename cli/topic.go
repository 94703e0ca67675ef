package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	ucli "github.com/urfave/cli/v2"

	"paymentlog/client"
	"paymentlog/wire"
)

func init() { commands = append(commands, topicCommand) }

const defaultAdminTimeout = 30 * time.Second

func topicCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "topic",
		Usage: "create, list, describe, alter (add partitions), alter-config, reassign and delete topics; list their offsets and idempotent producers",
		Subcommands: []*ucli.Command{
			{
				Name:      "create",
				Usage:     "create a topic and wait until every partition has a leader",
				UsageText: "paymentlog topic create NAME [--partitions 3] [--replication-factor 3] [--min-insync-replicas 2] [--config k=v]... [--if-not-exists]",
				Flags: withFlags(clientFlags(), []ucli.Flag{
					&ucli.IntFlag{Name: "partitions", Value: 3, Usage: "number of partitions", EnvVars: envVar("TOPIC_PARTITIONS")},
					&ucli.IntFlag{Name: "replication-factor", Value: 3, Usage: "replicas per partition", EnvVars: envVar("TOPIC_REPLICATION_FACTOR")},
					&ucli.IntFlag{Name: "min-insync-replicas", Value: 2, Usage: "acks=all writes need this many in-sync replicas", EnvVars: envVar("TOPIC_MIN_INSYNC_REPLICAS")},
					&ucli.StringSliceFlag{Name: "config", Usage: "topic config key=value; repeat the flag for several (each value is taken whole, commas included; PAYMENTLOG_TOPIC_CONFIG holds one)", EnvVars: envVar("TOPIC_CONFIG")},
					&ucli.BoolFlag{Name: "if-not-exists", Usage: "succeed if the topic already exists", EnvVars: envVar("TOPIC_IF_NOT_EXISTS")},
					timeoutFlag("TOPIC_TIMEOUT", defaultAdminTimeout),
				}),
				Action: func(c *ucli.Context) error {
					opts, err := parseTopicCreate(c)
					if err != nil {
						return err
					}
					return runTopicCreate(c.Context, opts, c.App.Writer, c.App.ErrWriter)
				},
			},
			{
				Name:      "list",
				Usage:     "list topic names",
				UsageText: "paymentlog topic list [--json]",
				Flags: withFlags(clientFlags(), []ucli.Flag{
					&ucli.BoolFlag{Name: "json", Usage: "print a JSON array of names", EnvVars: envVar("TOPIC_JSON")},
					timeoutFlag("TOPIC_TIMEOUT", defaultAdminTimeout),
				}),
				Action: func(c *ucli.Context) error {
					if c.NArg() > 0 {
						return usageError("topic list takes no arguments")
					}
					opts, err := parseTopicCommon(c, "")
					if err != nil {
						return err
					}
					return runTopicList(c.Context, opts, c.App.Writer, c.App.ErrWriter)
				},
			},
			{
				Name:  "describe",
				Usage: "show partitions: leader, epoch, replicas, ISR, high watermark, log start (--replicas: each replica's offsets, lag and size)",
				UsageText: "paymentlog topic describe [NAME] [--under-replicated | --under-min-isr | --at-min-isr | --unavailable] [--replicas] [--json]\n" +
					"   Without NAME: every topic. With a filter: only the partitions it matches, and only topics that have one.\n" +
					"   --replicas also asks every replica's broker for its own log start, log end, high watermark, size\n" +
					"   and segment count, and shows its lag behind the leader's log end (Kafka's kafka-log-dirs).",
				Flags: withFlags(clientFlags(), healthFlags(), []ucli.Flag{
					&ucli.BoolFlag{Name: "json", Usage: "print JSON (an object with NAME; an array of them without)", EnvVars: envVar("TOPIC_JSON")},
					&ucli.BoolFlag{Name: "replicas", Usage: "also each replica's own log start and end, high watermark, lag behind the leader, size and segments, asked of its broker (replica_states in --json)", EnvVars: envVar("TOPIC_REPLICAS")},
					timeoutFlag("TOPIC_TIMEOUT", defaultAdminTimeout),
				}),
				Action: func(c *ucli.Context) error {
					if c.NArg() > 1 {
						return usageError("expected at most one topic name, got %d arguments: %s", c.NArg(), strings.Join(c.Args().Slice(), " "))
					}
					opts, err := parseTopicCommon(c, c.Args().First())
					if err != nil {
						return err
					}
					if opts.health, err = parseHealthFilter(c); err != nil {
						return err
					}
					opts.replicas = c.Bool("replicas")
					return runTopicDescribe(c.Context, opts, c.App.Writer, c.App.ErrWriter)
				},
			},
			topicOffsetsCommand(),
			topicDescribeProducersCommand(),
			topicDeleteRecordsCommand(),
			topicAlterCommand(),
			topicAlterConfigCommand(),
			topicReassignCommand(),
			{
				Name:      "delete",
				Usage:     "delete a topic and wait until no node lists it",
				UsageText: "paymentlog topic delete NAME [--if-exists]",
				Flags: withFlags(clientFlags(), []ucli.Flag{
					&ucli.BoolFlag{Name: "if-exists", Usage: "succeed if the topic does not exist", EnvVars: envVar("TOPIC_IF_EXISTS")},
					timeoutFlag("TOPIC_TIMEOUT", defaultAdminTimeout),
				}),
				Action: func(c *ucli.Context) error {
					name, err := oneArg(c, "topic name")
					if err != nil {
						return err
					}
					opts, err := parseTopicCommon(c, name)
					if err != nil {
						return err
					}
					opts.ifExists = c.Bool("if-exists")
					return runTopicDelete(c.Context, opts, c.App.Writer, c.App.ErrWriter)
				},
			},
		},
	}
}

// topicOptions are the flags of the topic subcommands.
type topicOptions struct {
	client      clientOptions
	name        string
	spec        client.TopicSpec
	ifNotExists bool
	ifExists    bool
	json        bool
	timeout     time.Duration
	health      healthFilter // describe: nil for every partition
	replicas    bool         // describe: ask every replica (--replicas)
}

func parseTopicCommon(c *ucli.Context, name string) (topicOptions, error) {
	co, err := parseClientOptions(c)
	if err != nil {
		return topicOptions{}, usageError("%v", err)
	}
	return topicOptions{client: co, name: name, json: c.Bool("json"), timeout: c.Duration("timeout")}, nil
}

func parseTopicCreate(c *ucli.Context) (topicOptions, error) {
	name, err := oneArg(c, "topic name")
	if err != nil {
		return topicOptions{}, err
	}
	opts, err := parseTopicCommon(c, name)
	if err != nil {
		return opts, err
	}
	p, rf, isr := c.Int("partitions"), c.Int("replication-factor"), c.Int("min-insync-replicas")
	switch {
	case p < 1:
		return opts, usageError("--partitions must be at least 1")
	case rf < 1:
		return opts, usageError("--replication-factor must be at least 1")
	case isr < 1 || isr > rf:
		return opts, usageError("--min-insync-replicas must be between 1 and --replication-factor (%d)", rf)
	}
	cfgs := map[string]string{}
	for _, kv := range c.StringSlice("config") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return opts, usageError("--config %q is not key=value", kv)
		}
		cfgs[k] = v
	}
	if len(cfgs) == 0 {
		cfgs = nil
	}
	opts.spec = client.TopicSpec{Name: name, Partitions: int32(p), ReplicationFactor: int32(rf), MinISR: int32(isr), Configs: cfgs}
	opts.ifNotExists = c.Bool("if-not-exists")
	return opts, nil
}

// withAdmin runs fn with a client's Admin under the command's timeout.
func withAdmin(ctx context.Context, co clientOptions, timeout time.Duration, stderr io.Writer, fn func(context.Context, *client.Admin) error) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	cl, err := co.newClient(ctx, stderr)
	if err != nil {
		return err
	}
	defer closeClient(cl)
	return fn(ctx, cl.Admin())
}

func runTopicCreate(ctx context.Context, opts topicOptions, stdout, stderr io.Writer) error {
	return withAdmin(ctx, opts.client, opts.timeout, stderr, func(ctx context.Context, a *client.Admin) error {
		_, err := a.CreateTopic(ctx, opts.spec)
		if client.ErrorCode(err) == wire.TopicAlreadyExists {
			if opts.ifNotExists {
				fmt.Fprintf(stdout, "topic %s already exists\n", opts.spec.Name)
				return nil
			}
			return fmt.Errorf("topic %s already exists", opts.spec.Name)
		}
		if err != nil {
			return fmt.Errorf("create topic %s: %w", opts.spec.Name, err)
		}
		fmt.Fprintf(stdout, "created topic %s (%d partitions, replication factor %d, min ISR %d)\n",
			opts.spec.Name, opts.spec.Partitions, opts.spec.ReplicationFactor, opts.spec.MinISR)
		return nil
	})
}

func runTopicList(ctx context.Context, opts topicOptions, stdout, stderr io.Writer) error {
	return withAdmin(ctx, opts.client, opts.timeout, stderr, func(ctx context.Context, a *client.Admin) error {
		names, err := a.ListTopics(ctx)
		if err != nil {
			return fmt.Errorf("list topics: %w", err)
		}
		if opts.json {
			b, _ := json.Marshal(names)
			_, err = fmt.Fprintf(stdout, "%s\n", b)
			return err
		}
		for _, n := range names {
			if _, err := fmt.Fprintln(stdout, n); err != nil {
				return err
			}
		}
		return nil
	})
}

func runTopicDescribe(ctx context.Context, opts topicOptions, stdout, stderr io.Writer) error {
	return withAdmin(ctx, opts.client, opts.timeout, stderr, func(ctx context.Context, a *client.Admin) error {
		names := []string{opts.name}
		if opts.name == "" {
			var err error
			if names, err = a.ListTopics(ctx); err != nil {
				return fmt.Errorf("list topics: %w", err)
			}
		}
		all := make([]client.TopicDescription, 0, len(names))
		var totals []int
		for _, name := range names {
			describe := a.DescribeTopic
			if opts.replicas {
				describe = a.DescribeTopicReplicas
			}
			d, err := describe(ctx, name)
			if opts.name == "" && client.ErrorCode(err) == wire.UnknownTopicOrPartition {
				continue // deleted since the list
			}
			if err != nil {
				return fmt.Errorf("describe topic %s: %w", name, err)
			}
			total := len(d.Partitions)
			if d = filterPartitions(d, opts.health); opts.name == "" && total > 0 && len(d.Partitions) == 0 {
				continue
			}
			all, totals = append(all, d), append(totals, total)
		}
		if opts.json {
			var v any = all
			if opts.name != "" {
				v = all[0]
			}
			b, err := json.Marshal(v)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(stdout, "%s\n", b)
			return err
		}
		for i, d := range all {
			if i > 0 {
				fmt.Fprintln(stdout)
			}
			if err := printTopic(stdout, d, totals[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// printTopic prints d, whose partitions a filter may have thinned out of
// total.
func printTopic(stdout io.Writer, d client.TopicDescription, total int) error {
	fmt.Fprintf(stdout, "Topic: %s  Partitions: %d  Replication factor: %d  Min ISR: %d\n",
		d.Name, total, d.ReplicationFactor, d.MinISR)
	fmt.Fprintf(stdout, "Configs: %s\n", formatConfigs(d.Configs))
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	// RACKS (each replica's, in replica order) only when a replica's broker
	// has one, as cluster status's RACK column.
	header := "PARTITION\tLEADER\tEPOCH\tREPLICAS\tISR\tHIGH WATERMARK\tLOG START"
	if len(d.Racks) > 0 {
		header += "\tRACKS"
	}
	fmt.Fprintln(tw, header)
	for _, p := range d.Partitions {
		leader := fmt.Sprint(p.Leader)
		if p.Leader < 0 {
			leader = "none (offline)"
		}
		isr := joinIDs(p.ISR)
		if len(p.ISR) == 0 {
			isr = "none (" + joinIDs(p.LostReplicas) + " lost its storage as the last in-sync replica: only an unclean election can elect a leader)"
		}
		if len(p.ELR) > 0 {
			isr += " (eligible: " + joinIDs(p.ELR) + ")"
		}
		replicas := replicasText(p)
		if n := len(target(p)); n != int(d.ReplicationFactor) {
			// A replication factor change whose move was cancelled on
			// this partition left it another count.
			replicas += fmt.Sprintf(" (%d, not the topic's replication factor %d)", n, d.ReplicationFactor)
		}
		row := fmt.Sprintf("%d\t%s\t%d\t%s\t%s\t%s\t%s", p.Partition, leader, p.LeaderEpoch,
			replicas, isr, unknownIfNeg(p.HighWatermark), unknownIfNeg(p.LogStartOffset))
		if len(d.Racks) > 0 {
			row += "\t" + racksText(p.Replicas, d.Racks)
		}
		fmt.Fprintln(tw, row)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return printReplicaStates(stdout, d)
}

func runTopicDelete(ctx context.Context, opts topicOptions, stdout, stderr io.Writer) error {
	return withAdmin(ctx, opts.client, opts.timeout, stderr, func(ctx context.Context, a *client.Admin) error {
		err := a.DeleteTopic(ctx, opts.name)
		if client.ErrorCode(err) == wire.UnknownTopicOrPartition {
			if opts.ifExists {
				fmt.Fprintf(stdout, "topic %s does not exist\n", opts.name)
				return nil
			}
			return fmt.Errorf("topic %s does not exist", opts.name)
		}
		if err != nil {
			return fmt.Errorf("delete topic %s: %w", opts.name, err)
		}
		fmt.Fprintf(stdout, "deleted topic %s\n", opts.name)
		return nil
	})
}

func joinIDs(ids []int32) string {
	if len(ids) == 0 {
		return "-"
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ",")
}

func unknownIfNeg(v int64) string {
	if v < 0 {
		return "?"
	}
	return fmt.Sprint(v)
}

// racksText is a partition's RACKS column: its replicas' racks in replica
// order, "-" for a broker without one.
func racksText(replicas []int32, racks map[int32]string) string {
	names := make([]string, len(replicas))
	for i, id := range replicas {
		names[i] = cmp.Or(racks[id], "-")
	}
	return strings.Join(names, ",")
}
