package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	ucli "github.com/urfave/cli/v2"

	"paymentlog/client"
)

func init() { commands = append(commands, clusterCommand) }

func clusterCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "cluster",
		Usage: "inspect the cluster and its metadata quorum, set its dynamic configs, unregister decommissioned brokers",
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
		}, clusterQuorumCommand(), clusterAlterConfigCommand(), clusterUnregisterCommand()},
	}
}

// clusterStatusJSON is `cluster status --json` (DESIGN §7): the client's
// ClusterStatus keys, plus states_stale: true when no active controller is
// known (controller_id -1), so each node's state is the last one known to
// the answering node, not a current one.
type clusterStatusJSON struct {
	client.ClusterStatus
	StatesStale bool `json:"states_stale"`
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
		// The answering node reports the controller as unknown (-1) when
		// none is elected or none has answered its heartbeats within a
		// session timeout. Only a controller fences a broker, so the states
		// are then the last ones known: a node that died still reads alive.
		stale := st.ControllerID < 0
		if opts.json {
			b, err := json.Marshal(clusterStatusJSON{ClusterStatus: st, StatesStale: stale})
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
		alive := fmt.Sprintf("%d/%d", st.Alive(), len(st.Nodes))
		if stale {
			alive = fmt.Sprintf("unknown (last known %s)", alive)
		}
		fmt.Fprintf(stdout, "Active controller: %s  Metadata offset: %d  Alive: %s", ctrl, st.MetadataOffset, alive)
		if st.MetadataVersion > 0 {
			fmt.Fprintf(stdout, "  Metadata version: %d", st.MetadataVersion)
		}
		fmt.Fprintln(stdout)
		if len(st.Configs) > 0 {
			fmt.Fprintf(stdout, "Cluster configs: %s\n", formatConfigs(st.Configs))
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		// MAX VERSION: the highest metadata version the node's build
		// applies ("-" from an answering node older than the field).
		// RACK only when some node has one.
		racks := slices.ContainsFunc(st.Nodes, func(n client.NodeStatus) bool { return n.Rack != "" })
		header := "ID\tADDRESS\tSTATE\tCONTROLLER\tMAX VERSION"
		if racks {
			header += "\tRACK"
		}
		fmt.Fprintln(tw, header)
		for _, n := range st.Nodes {
			role := "-"
			switch {
			case n.ID == st.ControllerID:
				role = "active"
			case n.ControllerEligible:
				role = "eligible"
			}
			state := n.State
			if stale {
				state += " (stale)"
			}
			mv := "-"
			if n.MetadataVersion > 0 {
				mv = fmt.Sprint(n.MetadataVersion)
			}
			row := fmt.Sprintf("%d\t%s\t%s\t%s\t%s", n.ID, n.Addr, state, role, mv)
			if racks {
				row += "\t" + cmp.Or(n.Rack, "-")
			}
			fmt.Fprintln(tw, row)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if stale && len(st.Nodes) > 0 {
			_, err = fmt.Fprintln(stdout, "No active controller known to the answering node (none elected: a majority of the controllers must run; or none reachable from it): the states are the last ones known, a stopped node may still show as alive.")
		}
		return err
	})
}
