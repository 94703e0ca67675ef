// Package cli holds paymentlog's command line: one file per command group, each
// returning a *cli.Command whose Action parses flags into an options struct and
// calls a run(ctx, opts, stdout, stderr) function that is testable without a process.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"

	ucli "github.com/urfave/cli/v2"

	"paymentlog/quic"
)

// Version is the paymentlog release; overridden at link time with -ldflags "-X paymentlog/cli.Version=...".
var Version = "0.1.0-dev"

// commands lists the constructors of every top-level command. Each command
// group's file appends to it in init. NewApp builds fresh commands each
// time: urfave/cli keeps parse state in its flag and command values, so
// sharing them between apps (tests run many in one process) leaked one
// invocation's flags into the next.
var commands []func() *ucli.Command

// NewApp builds the urfave/cli application writing to the given streams.
func NewApp(stdout, stderr io.Writer) *ucli.App {
	app := &ucli.App{
		Name:                 "paymentlog",
		Usage:                "a replicated, partitioned commit log for payment events",
		Version:              Version,
		Writer:               stdout,
		ErrWriter:            stderr,
		EnableBashCompletion: false,
		HideVersion:          false,
		Commands:             appCommands(),
		ExitErrHandler:       func(*ucli.Context, error) {},
		OnUsageError:         onUsageError,
		// A list flag (topic create --config, bench --node-arg) takes one
		// value per occurrence, commas included: by default urfave/cli
		// splits every value at commas, so --config k=a,b became "k=a" and
		// "b" (not key=value). An environment variable holds one value.
		DisableSliceFlagSeparator: true,
	}
	app.Action = unknownCommand(func(c *ucli.Context) error { return ucli.ShowAppHelp(c) }, app.Commands)
	setOnUsageError(app.Commands)
	setHelpCommands(app)
	// urfave/cli adds its --help/-h to the app only when the app has no
	// command named "help"; ours has one, so "paymentlog --help" failed
	// with "flag: help requested" (exit 2). Commands add theirs anyway.
	app.Flags = append(app.Flags, ucli.HelpFlag)
	return app
}

// unknownCommand is the action of a command made only of subcommands: with
// no argument it shows help; with one that names no subcommand it is a usage
// error naming it (urfave/cli says "No help topic for 'x'", exit status 3).
func unknownCommand(help ucli.ActionFunc, subs []*ucli.Command) ucli.ActionFunc {
	return func(c *ucli.Context) error {
		if c.NArg() == 0 {
			return help(c)
		}
		var names []string
		for _, s := range subs {
			if !s.Hidden {
				names = append(names, s.Name)
			}
		}
		return usageError("unknown command %q (want one of: %s)", c.Args().First(), strings.Join(names, ", "))
	}
}

// onUsageError turns a flag that does not parse (--linger xx) into one line on
// stderr and exit status 2; by default urfave/cli prints "Incorrect Usage" and
// the whole help text to stdout, where scripts read output.
func onUsageError(_ *ucli.Context, err error, _ bool) error {
	return usageError("%s", longFlagNames(err.Error()))
}

// goFlagName is a flag name as Go's flag package writes it in its errors
// ("invalid value \"x\" for flag -partition", "flag provided but not
// defined: -nosuch"): one dash.
var goFlagName = regexp.MustCompile(`(flag |for |defined: |argument: )-([A-Za-z][A-Za-z0-9-]+)`)

// longFlagNames spells the flag names of Go's flag errors the way the
// documentation and --help do: --partition, not -partition.
func longFlagNames(msg string) string {
	return goFlagName.ReplaceAllString(msg, "$1--$2")
}

// setOnUsageError sets onUsageError (and the fixes below) on cmds and their subcommands.
func setOnUsageError(cmds []*ucli.Command) {
	for _, c := range cmds {
		if c.OnUsageError == nil {
			c.OnUsageError = onUsageError
		}
		if len(c.Subcommands) == 0 {
			// urfave/cli gives every command a "help" (alias "h") subcommand:
			// "produce help" showed help and exited 0 instead of writing to
			// the topic named help. --help still shows it.
			c.HideHelpCommand = true
		}
		if c.Action == nil && len(c.Subcommands) > 0 {
			c.Action = unknownCommand(func(c *ucli.Context) error { return ucli.ShowSubcommandHelp(c) }, c.Subcommands)
		}
		setOnUsageError(c.Subcommands)
	}
}

func init() {
	// "paymentlog --version" says what "paymentlog version" says (urfave/cli's
	// own printer wrote "paymentlog version 0.1.0-dev").
	ucli.VersionPrinter = func(c *ucli.Context) {
		fmt.Fprintf(c.App.Writer, "paymentlog %s\n", c.App.Version)
	}
}

func versionCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "version",
		Usage: "print the paymentlog version",
		Action: func(c *ucli.Context) error {
			_, err := fmt.Fprintf(c.App.Writer, "paymentlog %s\n", Version)
			return err
		},
	}
}

// Run executes the command line and returns the process exit status:
// 0 on full success, 1 on error (one line on stderr), 2 on usage errors.
func Run(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return RunContext(ctx, args, os.Stdout, os.Stderr)
}

// RunContext is Run with explicit context and streams, for tests.
func RunContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	app := NewApp(stdout, stderr)
	args = ReorderArgs(app, args)
	if err := app.RunContext(ctx, args); err != nil {
		var ec ucli.ExitCoder
		code := 1
		if errors.As(err, &ec) {
			code = ec.ExitCode()
		}
		msg := err.Error()
		if msg != "" {
			fmt.Fprintf(stderr, "paymentlog: %s\n", msg)
		}
		if h := errorHint(err); h != "" {
			fmt.Fprintf(stderr, "paymentlog: hint: %s\n", h)
		}
		return code
	}
	return 0
}

// errorHint says how to fix an error a newcomer is likely to meet, or "".
func errorHint(err error) string {
	if quic.IsClientCertRequired(err) {
		return "the cluster runs mutual TLS and this command presented no client certificate: " +
			"pass --tls-dir DIR (for scripts/cluster.sh: eval \"$(scripts/cluster.sh env)\")"
	}
	return ""
}

func appCommands() []*ucli.Command {
	out := []*ucli.Command{versionCommand()}
	for _, mk := range commands {
		out = append(out, mk())
	}
	return out
}
