package cli

import (
	"fmt"
	"strings"
	"testing"

	"paymentlog/node/metadata"
)

// cluster unregister against real nodes: the refusals (a live broker, an
// id not registered) exit 1 and usage errors 2, each with one line. The
// removal itself is node.TestUnregisterDecommissionedBroker. cluster status
// shows the metadata version each node's build applies, the figure that
// decides which nodes hold a version change back.
func TestClusterUnregister(t *testing.T) {
	bs := "--bootstrap=" + startNodes(t, 2)
	var out string
	waitForCLI(t, "both nodes alive in cluster status", func() bool {
		out, _, _ = runClientCLI(t, nil, "cluster", "status", bs)
		return strings.Contains(out, "Alive: 2/2")
	})
	if !strings.Contains(out, "CONTROLLER  MAX VERSION\n") || strings.Count(out, fmt.Sprintf("  %d\n", metadata.MetadataVersion)) != 2 {
		t.Fatalf("cluster status: %q", out)
	}
	for _, n := range clusterStatusJSONOf(t, bs)["nodes"].([]any) {
		if mv := n.(map[string]any)["metadata_version"]; mv != float64(metadata.MetadataVersion) {
			t.Fatalf("cluster status --json: node metadata_version %v, want %d", mv, metadata.MetadataVersion)
		}
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--id", "2"}, 1, "unregister broker 2: InvalidRequest: broker 2 is alive"},
		{[]string{"--id", "9"}, 1, "unregister broker 9: BrokerNotRegistered: broker 9 is not registered"},
		{[]string{}, 2, "--id N (a broker id > 0) is required"},
		{[]string{"--id", "0"}, 2, "--id N (a broker id > 0) is required"},
		{[]string{"3"}, 2, "takes no arguments"},
	} {
		_, errOut, code := runClientCLI(t, nil, append(append([]string{"cluster", "unregister"}, c.args...), bs, "--timeout", "30s")...)
		oneErrorLine(t, "cluster unregister "+strings.Join(c.args, " "), code, errOut, c.code, c.want)
	}
}
