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
	"paymentlog/wire"
)

func init() { commands = append(commands, groupCommand) }

// groupCommand is `paymentlog group`: consumer groups' committed offsets
// and members (Kafka's kafka-consumer-groups).
func groupCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "group",
		Usage: "list, describe (committed offsets, lag and members), set the offsets of and delete consumer groups",
		Subcommands: []*ucli.Command{
			{
				Name:      "list",
				Usage:     "list consumer groups: members, partitions with a committed offset, last commit",
				UsageText: "paymentlog group list [--json]",
				Flags:     groupFlags(true),
				Action: func(c *ucli.Context) error {
					if c.NArg() > 0 {
						return usageError("group list takes no arguments")
					}
					opts, err := parseGroupOptions(c, "")
					if err != nil {
						return err
					}
					return runGroupList(c.Context, opts, c.App.Writer, c.App.ErrWriter)
				},
			},
			groupDescribeCommand(),
			groupSetOffsetsCommand(),
			{
				Name:  "delete",
				Usage: "delete a consumer group and its committed offsets",
				UsageText: "paymentlog group delete GROUP\n\n" +
					"A group with members (consume --group without --partition running) is not deleted: stop them\n" +
					"first. Consumers using the group without membership (--partition) are not told: their next\n" +
					"commit creates it again.",
				Flags: groupFlags(false),
				Action: func(c *ucli.Context) error {
					name, err := oneArg(c, "group name")
					if err != nil {
						return err
					}
					opts, err := parseGroupOptions(c, name)
					if err != nil {
						return err
					}
					return runGroupDelete(c.Context, opts, c.App.Writer, c.App.ErrWriter)
				},
			},
		},
	}
}

// groupFlags are the flags every group subcommand takes (and --json).
func groupFlags(withJSON bool, more ...ucli.Flag) []ucli.Flag {
	own := []ucli.Flag{timeoutFlag("GROUP_TIMEOUT", defaultAdminTimeout)}
	if withJSON {
		own = append(own, &ucli.BoolFlag{Name: "json", Usage: "print JSON", EnvVars: envVar("GROUP_JSON")})
	}
	return withFlags(clientFlags(), own, more)
}

// groupOptions are the flags of the group subcommands.
type groupOptions struct {
	client  clientOptions
	group   string
	json    bool
	timeout time.Duration
}

func parseGroupOptions(c *ucli.Context, group string) (groupOptions, error) {
	co, err := parseClientOptions(c)
	if err != nil {
		return groupOptions{}, usageError("%v", err)
	}
	if c.Args().Present() && strings.TrimSpace(group) == "" {
		return groupOptions{}, usageError("the group name is empty")
	}
	return groupOptions{client: co, group: group, json: c.Bool("json"), timeout: c.Duration("timeout")}, nil
}

// groupListJSON is one group in `group list --json`.
type groupListJSON struct {
	Group        string `json:"group"`
	Members      int32  `json:"members"`
	Partitions   int32  `json:"partitions"`
	LastCommit   string `json:"last_commit"` // RFC 3339, UTC
	LastCommitMs int64  `json:"last_commit_ms"`
}

func runGroupList(ctx context.Context, opts groupOptions, stdout, stderr io.Writer) error {
	return withAdmin(ctx, opts.client, opts.timeout, stderr, func(ctx context.Context, a *client.Admin) error {
		groups, err := a.ListGroups(ctx)
		if err != nil {
			return fmt.Errorf("list groups: %w", err)
		}
		if opts.json {
			out := make([]groupListJSON, 0, len(groups))
			for _, g := range groups {
				out = append(out, groupListJSON{Group: g.Group, Partitions: g.Partitions, Members: g.Members,
					LastCommit: commitTime(g.LastCommitMs), LastCommitMs: g.LastCommitMs})
			}
			return printJSON(stdout, out)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "GROUP\tMEMBERS\tPARTITIONS\tLAST COMMIT")
		for _, g := range groups {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", g.Group, g.Members, g.Partitions, commitTime(g.LastCommitMs))
		}
		return tw.Flush()
	})
}

func runGroupDelete(ctx context.Context, opts groupOptions, stdout, stderr io.Writer) error {
	return withAdmin(ctx, opts.client, opts.timeout, stderr, func(ctx context.Context, a *client.Admin) error {
		err := a.DeleteGroup(ctx, opts.group)
		switch client.ErrorCode(err) {
		case wire.None:
		case wire.GroupIDNotFound:
			return fmt.Errorf("group %s does not exist", opts.group)
		case wire.NonEmptyGroup:
			return refusedWithMembers("delete group", opts.group, err)
		default:
			return fmt.Errorf("delete group %s: %w", opts.group, err)
		}
		fmt.Fprintf(stdout, "deleted group %s\n", opts.group)
		return nil
	})
}

// refusedWithMembers is the error of what (a change of group) refused
// with NonEmptyGroup.
func refusedWithMembers(what, group string, err error) error {
	return fmt.Errorf("%s %s: refused: the group has members (consume --group %s without --partition, or other group "+
		"consumers, running): stop them first; `group describe %s` lists them (%w)", what, group, group, group, err)
}

// commitTime formats a commit time (Unix ms) as RFC 3339 in UTC; "-" for none.
func commitTime(ms int64) string {
	if ms <= 0 {
		return "-"
	}
	return time.UnixMilli(ms).UTC().Format(time.RFC3339)
}

func printJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}
