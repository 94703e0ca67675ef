package cli

import (
	"io"
	"strings"
	"testing"

	ucli "github.com/urfave/cli/v2"
)

// TestEveryFlagHasAnEnvVar holds DESIGN §7's contract: every flag of every
// command has a PAYMENTLOG_* environment variable, and no two flags of one
// command share one (help and version are urfave/cli's own).
func TestEveryFlagHasAnEnvVar(t *testing.T) {
	app := NewApp(io.Discard, io.Discard)
	checked := 0
	var walk func(path string, cmds []*ucli.Command)
	walk = func(path string, cmds []*ucli.Command) {
		for _, c := range cmds {
			name := strings.TrimSpace(path + " " + c.Name)
			seen := map[string]string{}
			for _, f := range c.Flags {
				fname := f.Names()[0]
				if fname == "help" {
					continue
				}
				ev, ok := f.(interface{ GetEnvVars() []string })
				if !ok || len(ev.GetEnvVars()) == 0 {
					t.Errorf("%s --%s: no environment variable", name, fname)
					continue
				}
				checked++
				for _, v := range ev.GetEnvVars() {
					if !strings.HasPrefix(v, "PAYMENTLOG_") {
						t.Errorf("%s --%s: environment variable %s is not PAYMENTLOG_*", name, fname, v)
					}
					if other, dup := seen[v]; dup {
						t.Errorf("%s: --%s and --%s share %s", name, other, fname, v)
					}
					seen[v] = fname
				}
			}
			walk(name, c.Subcommands)
		}
	}
	walk("", app.Commands)
	if checked < 100 {
		t.Fatalf("only %d flags checked: the walk missed commands", checked)
	}
}
