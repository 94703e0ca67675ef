package cli

import (
	"strings"

	ucli "github.com/urfave/cli/v2"
)

// helpCommand replaces urfave/cli's own "help" command (alias "h"), which
// answers a name that is no command with "No help topic for 'x'" and exit
// status 3: here, as for "paymentlog x", that is a usage error naming the
// commands there are. urfave/cli adds its own only where no command is
// named "help", so setHelpCommands puts this one in the app and in every
// command group.
func helpCommand() *ucli.Command {
	return &ucli.Command{
		Name:            "help",
		Aliases:         []string{"h"},
		Usage:           "show the commands, or one command's help",
		ArgsUsage:       "[command]",
		HideHelpCommand: true,
		Action: func(c *ucli.Context) error {
			lineage := c.Lineage()
			parent := lineage[1]
			atRoot := len(lineage) <= 3 // help, the app, the empty root
			if c.NArg() == 0 {
				if atRoot {
					return ucli.ShowAppHelp(parent)
				}
				return ucli.ShowSubcommandHelp(parent)
			}
			subs := parent.App.Commands
			if !atRoot {
				subs = parent.Command.Subcommands
			}
			name := c.Args().First()
			var names []string
			for _, s := range subs {
				if s.HasName(name) {
					return ucli.ShowCommandHelp(parent, name)
				}
				if !s.Hidden && s.Name != "help" {
					names = append(names, s.Name)
				}
			}
			return usageError("unknown command %q (want one of: %s)", name, strings.Join(names, ", "))
		},
	}
}

// setHelpCommands gives the app and every command group helpCommand.
func setHelpCommands(app *ucli.App) {
	app.Commands = append(app.Commands, helpCommand())
	var walk func([]*ucli.Command)
	walk = func(cmds []*ucli.Command) {
		for _, c := range cmds {
			if len(c.Subcommands) > 0 {
				walk(c.Subcommands)
				c.Subcommands = append(c.Subcommands, helpCommand())
			}
		}
	}
	walk(app.Commands)
}
