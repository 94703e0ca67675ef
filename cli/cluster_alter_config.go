package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	ucli "github.com/urfave/cli/v2"

	"paymentlog/client"
)

// clusterAlterConfigCommand is `paymentlog cluster alter-config --set k=v
// --delete k`: Kafka's `kafka-configs --entity-type brokers
// --entity-default --alter` for the cluster-wide dynamic configs.
func clusterAlterConfigCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "alter-config",
		Usage: "set or delete cluster configs; applied by every node without a restart",
		UsageText: "paymentlog cluster alter-config [--set key=value]... [--delete key]...\n\n" +
			"keys: reassignment.throttle.bytes (bytes per second each node copies for replicas a\n" +
			"reassignment is adding; 0: unlimited; deleted: each node's --reassignment-throttle),\n" +
			"log.cleaner.io.max.bytes.per.second (bytes per second each node's log cleaner reads and\n" +
			"writes; 0: unlimited; deleted: each node's --log-cleaner-io-max-bytes-per-second),\n" +
			"log.cleaner.threads (how many partitions each node's log cleaner compacts at once, from\n" +
			"its next pass; >= 1, a node clamps it to its dedupe buffer at 1 MiB a thread; deleted:\n" +
			"each node's --log-cleaner-threads),\n" +
			"log.scrub.quarantine.retention.ms (how long each node keeps what a scrub repair set\n" +
			"aside before removing it once redundant; 0: never; deleted: each node's\n" +
			"--log-scrub-quarantine-retention),\n" +
			"offsets.retention.ms (how long a consumer group that stopped committing keeps its\n" +
			"offsets; -1: forever; deleted: 7 days), log.message.timestamp.type,\n" +
			"log.message.timestamp.before.max.ms, log.message.timestamp.after.max.ms, message.max.bytes,\n" +
			"compression.type (the defaults of the topic configs message.timestamp.*, max.message.bytes\n" +
			"and compression.type, for topics that do not set them)",
		Flags: withFlags(clientFlags(), []ucli.Flag{
			&ucli.StringSliceFlag{Name: "set", Usage: "config key=value to set; repeat the flag for several (PAYMENTLOG_CLUSTER_ALTER_SET holds one)", EnvVars: envVar("CLUSTER_ALTER_SET")},
			&ucli.StringSliceFlag{Name: "delete", Usage: "config key to delete; repeat the flag for several (PAYMENTLOG_CLUSTER_ALTER_DELETE holds one)", EnvVars: envVar("CLUSTER_ALTER_DELETE")},
			timeoutFlag("CLUSTER_TIMEOUT", defaultAdminTimeout),
		}),
		Action: func(c *ucli.Context) error {
			if c.NArg() > 0 {
				return usageError("cluster alter-config takes no arguments")
			}
			co, err := parseClientOptions(c)
			if err != nil {
				return usageError("%v", err)
			}
			ch, err := parseConfigChange(c)
			if err != nil {
				return err
			}
			return runClusterAlterConfig(c.Context, co, ch, c.Duration("timeout"), c.App.Writer, c.App.ErrWriter)
		},
	}
}

func runClusterAlterConfig(ctx context.Context, co clientOptions, ch client.ConfigChange, timeout time.Duration, stdout, stderr io.Writer) error {
	return withAdmin(ctx, co, timeout, stderr, func(ctx context.Context, a *client.Admin) error {
		if err := a.AlterClusterConfigs(ctx, ch); err != nil {
			return fmt.Errorf("alter cluster configs: %w", err)
		}
		st, err := a.DescribeCluster(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "altered cluster configs: %s\n", formatConfigs(st.Configs))
		return nil
	})
}
