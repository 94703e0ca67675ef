package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	ucli "github.com/urfave/cli/v2"

	"paymentlog/client"
)

func init() { commands = append(commands, clusterCommand) }

func clusterCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "cluster",
		Usage: "inspect the cluster",
		Subcommands: []*ucli.Command{{
			Name:      "status",
			Usage:     "nodes (alive/fenced), controller eligibility, the active controller",
			UsageText: "paymentlog cluster status [--json]",
			Flags: withFlags(clientFlags(), []ucli.Flag{
				&ucli.BoolFlag{Name: "json", Usage: "print JSON", EnvVars: envVar("CLUSTER_JSON")},
				timeoutFlag("CLUSTER_TIMEOUT", 10*time.Second),
			}),
			Action: func(c *ucli.Context) error {
				if c.NArg() > 0 {
					return usageError("cluster status takes no arguments")
				}
				co, err := parseClientOptions(c)
				if err != nil {
					return usageError("%v", err)
				}
				return runClusterStatus(c.Context, clusterOptions{client: co, json: c.Bool("json"), timeout: c.Duration("timeout")}, c.App.Writer, c.App.ErrWriter)
			},
		}},
	}
}

type clusterOptions struct {
	client  clientOptions
	json    bool
	timeout time.Duration
}

func runClusterStatus(ctx context.Context, opts clusterOptions, stdout, stderr io.Writer) error {
	return withAdmin(ctx, opts.client, opts.timeout, stderr, func(ctx context.Context, a *client.Admin) error {
		st, err := a.DescribeCluster(ctx)
		if err != nil {
			return fmt.Errorf("cluster status: %w", err)
		}
		if opts.json {
			b, err := json.Marshal(st)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(stdout, "%s\n", b)
			return err
		}
		ctrl := "none"
		if st.ControllerID >= 0 {
			ctrl = fmt.Sprint(st.ControllerID)
		}
		fmt.Fprintf(stdout, "Active controller: %s  Metadata offset: %d  Alive: %d/%d\n", ctrl, st.MetadataOffset, st.Alive(), len(st.Nodes))
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tADDRESS\tSTATE\tCONTROLLER")
		for _, n := range st.Nodes {
			role := "-"
			switch {
			case n.ID == st.ControllerID:
				role = "active"
			case n.ControllerEligible:
				role = "eligible"
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", n.ID, n.Addr, n.State, role)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if st.ControllerID < 0 && len(st.Nodes) > 0 {
			// Only a controller fences a broker: without one, a node that
			// died still reads "alive" in the answering node's image.
			_, err = fmt.Fprintln(stdout, "No active controller (it needs a majority of the controllers running): the states are the last ones known, a stopped node may still show as alive.")
		}
		return err
	})
}
