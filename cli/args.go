package cli

import (
	"strings"

	ucli "github.com/urfave/cli/v2"
)

// ReorderArgs moves flags written after positional arguments in front of them,
// so "paymentlog topic create payments --partitions 3" works: urfave/cli/v2
// stops parsing flags at the first positional argument. Everything after a
// literal "--" is left alone. Flags that take a value keep it next to them.
//
// A flag that takes a value but ends the command line ("produce payments
// --partition") stays last, with the positionals dropped: moved in front of
// them it would take the topic as its value ("invalid value \"payments\" for
// flag --partition"), while last it makes the flag parser say what is wrong
// ("flag needs an argument: --partition"). The parse fails either way, so the
// positionals are never read.
//
// A help flag among the flags ("produce payments --help") leaves only the
// command path and --help: the command's help is shown and nothing runs. So
// does "help topic create".
func ReorderArgs(app *ucli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	if line, ok := helpPath(app, args[1:]); ok {
		return append([]string{args[0]}, line...)
	}
	out := []string{args[0]}
	cmds := app.Commands
	var flags []ucli.Flag = app.Flags
	i := 1
	// Walk down the command path (leading words that name subcommands).
	for i < len(args) {
		a := args[i]
		if strings.HasPrefix(a, "-") {
			break
		}
		c := findCommand(cmds, a)
		if c == nil {
			break
		}
		out = append(out, a)
		cmds = c.Subcommands
		flags = c.Flags
		i++
	}
	var flagArgs, positional []string
	for i < len(args) {
		a := args[i]
		if a == "--" {
			// Everything is positional from here on; the positionals seen
			// before it go after the "--" too, so a trailing "--" (as in
			// "produce payments --json --") does not count as an argument.
			out = append(append(out, flagArgs...), "--")
			out = append(out, positional...)
			return append(out, args[i+1:]...)
		}
		if strings.HasPrefix(a, "-") && a != "-" {
			if isHelpFlag(a) {
				// urfave/cli reads a positional before --help as a help
				// topic ("topic create x --help": "No help topic for
				// 'x'", exit 3): help is asked for the command path. In
				// a command group ("topic bogus --help") the positional
				// names no subcommand: its usage error says so.
				if len(positional) > 0 && len(cmds) > 0 {
					return append(out, positional[0])
				}
				return append(out, "--help")
			}
			flagArgs = append(flagArgs, a)
			if !strings.Contains(a, "=") && flagTakesValue(flags, a) {
				if i+1 == len(args) {
					return append(out, flagArgs...)
				}
				flagArgs = append(flagArgs, args[i+1])
				i++
			}
			i++
			continue
		}
		positional = append(positional, a)
		i++
	}
	out = append(out, flagArgs...)
	return append(out, positional...)
}

// helpPath reads "help topic create" (or "h ..."), which urfave/cli's help
// command read only as far as "topic": the command line that shows the help
// of the command path named, or, where a word names no subcommand of a
// command group ("help topic bogus"), the one that says so. Words after a
// command without subcommands are its arguments and are dropped.
func helpPath(app *ucli.App, args []string) ([]string, bool) {
	if len(args) < 3 || (args[0] != "help" && args[0] != "h") {
		return nil, false
	}
	var path []string
	cmds := app.Commands
	for _, a := range args[1:] {
		c := findCommand(cmds, a)
		if c == nil || c.Name == "help" {
			if len(path) == 0 {
				return nil, false // help's own usage error names it
			}
			return append(path, a), true // unknownCommand's usage error
		}
		path = append(path, a)
		if len(c.Subcommands) == 0 {
			break
		}
		cmds = c.Subcommands
	}
	return append(path, "--help"), true
}

// isHelpFlag reports whether arg asks for help: -h, --help, -help, or
// either with "=true".
func isHelpFlag(arg string) bool {
	name, val, hasVal := strings.Cut(strings.TrimLeft(arg, "-"), "=")
	return (name == "h" || name == "help") && (!hasVal || val == "true")
}

func findCommand(cmds []*ucli.Command, name string) *ucli.Command {
	for _, c := range cmds {
		if c.Name == name {
			return c
		}
		for _, al := range c.Aliases {
			if al == name {
				return c
			}
		}
	}
	return nil
}

func flagTakesValue(flags []ucli.Flag, arg string) bool {
	name := strings.TrimLeft(arg, "-")
	for _, f := range flags {
		for _, n := range f.Names() {
			if n != name {
				continue
			}
			if _, ok := f.(*ucli.BoolFlag); ok {
				return false
			}
			return true
		}
	}
	return false
}
