package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	ucli "github.com/urfave/cli/v2"

	"paymentlog/client"
)

// clusterQuorumCommand is `paymentlog cluster quorum`: Kafka's
// `kafka-metadata-quorum.sh describe --status --replication`, every node's
// own view of the replicated metadata log.
func clusterQuorumCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "quorum",
		Usage: "the metadata log's raft quorum: leader, term, voters and observers, and every node's log end, commit, applied index and lag",
		UsageText: "paymentlog cluster quorum [--json]\n\n" +
			"Asks every node (each registered broker and each listed controller) for its own view of\n" +
			"__cluster_metadata-0. LAG is the leader's last index minus the node's: a voter that keeps a\n" +
			"lag is a controller the quorum cannot count on; an observer (a broker-only node) with a lag\n" +
			"serves older metadata. VOTE GUARDED marks a controller that started with an empty metadata\n" +
			"log and does not vote until it has caught up. A node that does not answer is listed with\n" +
			"the error; the exit status is 0 as long as one node described the cluster.",
		Flags: withFlags(clientFlags(), []ucli.Flag{
			&ucli.BoolFlag{Name: "json", Usage: "print JSON", EnvVars: envVar("CLUSTER_JSON")},
			timeoutFlag("CLUSTER_TIMEOUT", 10*time.Second),
		}),
		Action: func(c *ucli.Context) error {
			if c.NArg() > 0 {
				return usageError("cluster quorum takes no arguments")
			}
			co, err := parseClientOptions(c)
			if err != nil {
				return usageError("%v", err)
			}
			return runClusterQuorum(c.Context, clusterOptions{client: co, json: c.Bool("json"), timeout: c.Duration("timeout")}, c.App.Writer, c.App.ErrWriter)
		},
	}
}

func runClusterQuorum(ctx context.Context, opts clusterOptions, stdout, stderr io.Writer) error {
	return withAdmin(ctx, opts.client, opts.timeout, stderr, func(ctx context.Context, a *client.Admin) error {
		st, err := a.DescribeQuorum(ctx)
		if err != nil {
			return fmt.Errorf("cluster quorum: %w", err)
		}
		if opts.json {
			b, err := json.Marshal(st)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(stdout, "%s\n", b)
			return err
		}
		leader := "none"
		if st.LeaderID >= 0 {
			leader = fmt.Sprint(st.LeaderID)
		}
		fmt.Fprintf(stdout, "Leader: %s  Term: %d  Voters: %s  Observers: %s\n", leader, st.Term, joinIDs(st.Voters), joinIDs(st.Observers))
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tADDRESS\tROLE\tTERM\tLAST INDEX\tCOMMIT\tAPPLIED\tLAG\tSTATUS")
		for _, m := range st.Members {
			role := m.Role
			if role == "" {
				role = "-"
			}
			if m.Error != "" {
				fmt.Fprintf(tw, "%d\t%s\t%s\t-\t-\t-\t-\t-\tno answer: %s\n", m.ID, m.Addr, role, oneLine(m.Error))
				continue
			}
			applied, lag := "-", "-"
			if m.Applied > 0 {
				applied = fmt.Sprint(m.Applied)
			}
			if m.Lag >= 0 {
				lag = fmt.Sprint(m.Lag)
			}
			var status []string
			if m.Leader {
				status = append(status, "leader")
			}
			if m.VoteGuarded {
				status = append(status, "vote guarded (catching up after an empty start)")
			}
			if m.Term != st.Term && st.Term > 0 {
				status = append(status, "term differs from the leader's")
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n", m.ID, m.Addr, role, m.Term, m.LastIndex, m.Commit, applied, lag, strings.Join(status, "; "))
		}
		return tw.Flush()
	})
}

// oneLine keeps an error message on its table row.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
