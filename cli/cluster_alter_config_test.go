package cli

import (
	"strings"
	"testing"
)

// cluster alter-config against real nodes: the throttle is set (flags
// after the subcommand), shown by cluster status (and --json), deleted;
// refusals exit 1 and usage errors 2, each with one line.
func TestClusterAlterConfig(t *testing.T) {
	bs := "--bootstrap=" + startNodes(t, 2)
	run := func(args ...string) (string, string, int) {
		t.Helper()
		return runClientCLI(t, nil, append(args, bs, "--timeout", "30s")...)
	}
	out, errOut, code := run("cluster", "alter-config", "--set", "reassignment.throttle.bytes=10485760")
	if code != 0 || out != "altered cluster configs: reassignment.throttle.bytes=10485760\n" {
		t.Fatalf("set: %d %q %q", code, out, errOut)
	}
	if out, errOut, code := run("cluster", "status"); code != 0 || !strings.Contains(out, "Cluster configs: reassignment.throttle.bytes=10485760\n") ||
		!strings.Contains(out, "  Metadata version: 2\n") {
		t.Fatalf("status: %d %q %q", code, out, errOut)
	}
	st := clusterStatusJSONOf(t, bs)
	if cfg, _ := st["configs"].(map[string]any); cfg["reassignment.throttle.bytes"] != "10485760" || st["metadata_version"] != float64(2) {
		t.Fatalf("status --json: %v", st)
	}
	out, errOut, code = run("cluster", "alter-config", "--delete", "reassignment.throttle.bytes")
	if code != 0 || out != "altered cluster configs: (none set: defaults)\n" {
		t.Fatalf("delete: %d %q %q", code, out, errOut)
	}
	if out, _, _ := run("cluster", "status"); strings.Contains(out, "Cluster configs") {
		t.Fatalf("status after the delete: %q", out)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--set", "retention.ms=1"}, 1, `unknown cluster config "retention.ms"`},
		{[]string{"--set", "reassignment.throttle.bytes=fast"}, 1, "want bytes per second"},
		{[]string{}, 2, "nothing to change"},
		{[]string{"--set", "x"}, 2, `--set "x" is not key=value`},
		{[]string{"extra", "--delete", "k"}, 2, "takes no arguments"},
	} {
		_, errOut, code := run(append([]string{"cluster", "alter-config"}, c.args...)...)
		oneErrorLine(t, "cluster alter-config "+strings.Join(c.args, " "), code, errOut, c.code, c.want)
	}
}
