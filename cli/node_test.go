package cli

import (
	"strings"
	"testing"
)

// node start's usage errors are one line on stderr and exit status 2.
func TestNodeStartUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"node", "start"}, "--id, --addr, --data-dir, --controllers"},
		{[]string{"node", "start", "--id", "1", "--addr", "127.0.0.1:0", "--data-dir", dir}, "missing --controllers"},
		{[]string{"node", "start", "extra", "--id", "1", "--addr", "127.0.0.1:0", "--data-dir", dir, "--controllers", "1@127.0.0.1:1"}, "no arguments"},
	} {
		out, errOut, code := runClientCLI(t, nil, c.args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and %q", c.args, code, out, errOut, c.want)
		}
	}
}
