package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	ucli "github.com/urfave/cli/v2"

	"paymentlog/client"
)

// clusterUnregisterCommand is `paymentlog cluster unregister --id N`:
// Kafka's `kafka-cluster.sh unregister --id N`, for a broker that is gone
// for good.
func clusterUnregisterCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "unregister",
		Usage: "remove a decommissioned broker (stopped for good, holding no replica) from the cluster",
		UsageText: "paymentlog cluster unregister --id N\n\n" +
			"The broker must be fenced (its process stopped), hold no replica (move them first with\n" +
			"`topic reassign`) and not be a controller. It leaves `cluster status`, no longer counts for\n" +
			"metadata versions (an old build of it no longer blocks version changes) and stops receiving\n" +
			"the metadata log. Started again, it registers as a broker new to the cluster.",
		Flags: withFlags(clientFlags(), []ucli.Flag{
			&ucli.IntFlag{Name: "id", Usage: "id of the broker to remove", EnvVars: envVar("CLUSTER_UNREGISTER_ID")},
			timeoutFlag("CLUSTER_TIMEOUT", defaultAdminTimeout),
		}),
		Action: func(c *ucli.Context) error {
			if c.NArg() > 0 {
				return usageError("cluster unregister takes no arguments (the broker is --id N)")
			}
			if !c.IsSet("id") || c.Int("id") <= 0 || c.Int("id") > 1<<31-1 {
				return usageError("cluster unregister: --id N (a broker id > 0) is required")
			}
			co, err := parseClientOptions(c)
			if err != nil {
				return usageError("%v", err)
			}
			return runClusterUnregister(c.Context, co, int32(c.Int("id")), c.Duration("timeout"), c.App.Writer, c.App.ErrWriter)
		},
	}
}

func runClusterUnregister(ctx context.Context, co clientOptions, id int32, timeout time.Duration, stdout, stderr io.Writer) error {
	return withAdmin(ctx, co, timeout, stderr, func(ctx context.Context, a *client.Admin) error {
		if err := a.UnregisterBroker(ctx, id); err != nil {
			return fmt.Errorf("unregister broker %d: %w", id, err)
		}
		fmt.Fprintf(stdout, "unregistered broker %d\n", id)
		return nil
	})
}
