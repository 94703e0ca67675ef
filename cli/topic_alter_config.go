package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"paymentlog/client"
	"paymentlog/wire"
)

// topicAlterConfigCommand is `paymentlog topic alter-config NAME --set k=v
// --delete k`: Kafka's `kafka-configs --alter --add-config/--delete-config`
// for one topic.
func topicAlterConfigCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "alter-config",
		Usage: "set or delete topic configs (and min.insync.replicas); applied by every node without a restart",
		UsageText: "paymentlog topic alter-config NAME [--set key=value]... [--delete key]...\n\n" +
			"keys: retention.ms, retention.bytes, segment.ms, unclean.leader.election.enable, min.insync.replicas,\n" +
			"cleanup.policy (delete | compact | compact,delete), min.cleanable.dirty.ratio, delete.retention.ms,\n" +
			"min.compaction.lag.ms, max.compaction.lag.ms, message.timestamp.type (CreateTime | LogAppendTime),\n" +
			"message.timestamp.before.max.ms, message.timestamp.after.max.ms, max.message.bytes,\n" +
			"compression.type (producer | uncompressed | lz4 | zstd)\n" +
			"(segment.bytes is fixed at creation; a deleted key returns to its default)",
		Flags: withFlags(clientFlags(), []ucli.Flag{
			&ucli.StringSliceFlag{Name: "set", Usage: "config key=value to set; repeat the flag for several (PAYMENTLOG_TOPIC_ALTER_SET holds one)", EnvVars: envVar("TOPIC_ALTER_SET")},
			&ucli.StringSliceFlag{Name: "delete", Usage: "config key to delete (back to its default); repeat the flag for several (PAYMENTLOG_TOPIC_ALTER_DELETE holds one)", EnvVars: envVar("TOPIC_ALTER_DELETE")},
			timeoutFlag("TOPIC_TIMEOUT", defaultAdminTimeout),
		}),
		Action: func(c *ucli.Context) error {
			opts, err := parseTopicAlterConfig(c)
			if err != nil {
				return err
			}
			return runTopicAlterConfig(c.Context, opts, c.App.Writer, c.App.ErrWriter)
		},
	}
}

// topicAlterConfigOptions are alter-config's parsed flags.
type topicAlterConfigOptions struct {
	client  clientOptions
	name    string
	change  client.ConfigChange
	timeout time.Duration
}

func parseTopicAlterConfig(c *ucli.Context) (topicAlterConfigOptions, error) {
	name, err := oneArg(c, "topic name")
	if err != nil {
		return topicAlterConfigOptions{}, err
	}
	co, err := parseClientOptions(c)
	if err != nil {
		return topicAlterConfigOptions{}, usageError("%v", err)
	}
	opts := topicAlterConfigOptions{client: co, name: name, timeout: c.Duration("timeout")}
	opts.change, err = parseConfigChange(c)
	return opts, err
}

// parseConfigChange reads --set key=value and --delete key (each repeated
// at will) into a change; a usage error when malformed or empty.
func parseConfigChange(c *ucli.Context) (client.ConfigChange, error) {
	var ch client.ConfigChange
	// An empty value (an empty PAYMENTLOG_*_SET) is no change.
	for _, kv := range c.StringSlice("set") {
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return ch, usageError("--set %q is not key=value", kv)
		}
		if _, dup := ch.Set[k]; dup {
			return ch, usageError("--set %s given twice", k)
		}
		if ch.Set == nil {
			ch.Set = map[string]string{}
		}
		ch.Set[k] = v
	}
	for _, k := range c.StringSlice("delete") {
		if k == "" {
			continue
		}
		if strings.Contains(k, "=") {
			return ch, usageError("--delete %q: give the key alone", k)
		}
		if _, both := ch.Set[k]; both {
			return ch, usageError("%s is both set and deleted", k)
		}
		ch.Delete = append(ch.Delete, k)
	}
	if len(ch.Set) == 0 && len(ch.Delete) == 0 {
		return ch, usageError("nothing to change: give --set key=value or --delete key")
	}
	return ch, nil
}

func runTopicAlterConfig(ctx context.Context, opts topicAlterConfigOptions, stdout, stderr io.Writer) error {
	return withAdmin(ctx, opts.client, opts.timeout, stderr, func(ctx context.Context, a *client.Admin) error {
		err := a.AlterTopicConfigs(ctx, opts.name, opts.change)
		if client.ErrorCode(err) == wire.UnknownTopicOrPartition {
			return fmt.Errorf("topic %s does not exist", opts.name)
		}
		if err != nil {
			return fmt.Errorf("alter configs of topic %s: %w", opts.name, err)
		}
		fmt.Fprintf(stdout, "altered configs of topic %s\n", opts.name)
		return nil
	})
}

// formatConfigs renders a topic's configs as "k=v, k=v" in key order, or
// "(none set: defaults)".
func formatConfigs(cfg map[string]string) string {
	if len(cfg) == 0 {
		return "(none set: defaults)"
	}
	parts := make([]string, 0, len(cfg))
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		parts = append(parts, k+"="+cfg[k])
	}
	return strings.Join(parts, ", ")
}
