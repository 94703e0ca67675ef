package cli

import (
	"fmt"
	"io"

	ucli "github.com/urfave/cli/v2"
)

// Commands that rewrite a consumer group's committed offsets (`group
// set-offsets`, `mirror translate-offsets`) commit only when told to with
// --execute, as Kafka's kafka-consumer-groups --reset-offsets does: a
// group's offsets decide which payments its consumers process again or
// skip, so the default is the plan. --dry-run says so explicitly (and
// silences the hint); the two together are refused.

// executeFlag is the --execute flag of a command whose env var prefix is
// env (PAYMENTLOG_<env>_EXECUTE).
func executeFlag(env string) ucli.Flag {
	return &ucli.BoolFlag{Name: "execute", Usage: "commit the offsets (without it, or with --dry-run, the plan is printed and nothing is committed)", EnvVars: envVar(env + "_EXECUTE")}
}

// commitMode is what a run does with its plan.
type commitMode struct {
	dryRun bool // print the plan, commit nothing
	asked  bool // --dry-run was given (no hint that --execute commits)
}

// parseCommitMode reads --execute and --dry-run.
func parseCommitMode(c *ucli.Context) (commitMode, error) {
	execute, dry := c.Bool("execute"), c.Bool("dry-run")
	if execute && dry {
		return commitMode{}, usageError("give --execute or --dry-run, not both")
	}
	return commitMode{dryRun: !execute, asked: dry}, nil
}

// reportDryRun tells stderr that nothing was committed, and how to.
func (m commitMode) reportDryRun(stderr io.Writer) {
	if m.asked {
		fmt.Fprintln(stderr, "dry run: nothing committed")
		return
	}
	fmt.Fprintln(stderr, "dry run: nothing committed; add --execute to commit these offsets")
}
