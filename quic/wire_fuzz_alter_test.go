package quic_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"paymentlog/wire"
)

// AlterConfigs (frame type 9) is fuzzed with every other wire message.
func init() {
	wireMessages = append(wireMessages,
		func() any { return new(wire.AlterConfigsRequest) }, func() any { return new(wire.AlterConfigsResponse) })
}

// alterConfigsSeeds are the AlterConfigs messages of the committed corpus
// (testdata/fuzz/FuzzDecodeWireMessages/seed-alter-configs-*).
func alterConfigsSeeds() map[string]any {
	return map[string]any{
		"seed-alter-configs-request": &wire.AlterConfigsRequest{Topic: "payments",
			Set: map[string]string{"unclean.leader.election.enable": "true", "min.insync.replicas": "1"}, Delete: []string{"retention.ms"}},
		"seed-alter-configs-response": &wire.AlterConfigsResponse{Err: wire.InvalidConfig, Message: "Unknown topic config name: foo", ControllerID: 2},
		"seed-metadata-with-configs": &wire.MetadataResponse{ControllerID: 1, Topics: []wire.TopicMetadata{{Name: "payments",
			MinISR: 2, Configs: map[string]string{"retention.ms": "1000"}}}},
	}
}

// TestAlterConfigsFuzzSeeds checks the committed seeds still encode the
// messages (PAYMENTLOG_REWRITE_SEEDS=1 rewrites them).
func TestAlterConfigsFuzzSeeds(t *testing.T) { checkFuzzSeedFiles(t, alterConfigsSeeds()) }

// checkFuzzSeedFiles checks that each seed's file in FuzzDecodeWireMessages'
// committed corpus holds its encoding (PAYMENTLOG_REWRITE_SEEDS=1 rewrites
// them).
func checkFuzzSeedFiles(t *testing.T, seeds map[string]any) {
	t.Helper()
	dir := filepath.Join("testdata", "fuzz", "FuzzDecodeWireMessages")
	for name, m := range seeds {
		var buf bytes.Buffer
		enc := msgpack.NewEncoder(&buf)
		enc.SetSortMapKeys(true)
		if err := enc.Encode(m); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", buf.Bytes())
		path := filepath.Join(dir, name)
		if os.Getenv("PAYMENTLOG_REWRITE_SEEDS") != "" {
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != want {
			t.Errorf("%s: stale or missing (run with PAYMENTLOG_REWRITE_SEEDS=1): %v", path, err)
		}
	}
}
