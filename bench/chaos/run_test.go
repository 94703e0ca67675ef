package chaos

import (
	"strings"
	"testing"
	"time"

	"paymentlog/segment"
)

// TestConfigDefaultsNameTheConsumers: History.Consumers comes from
// Config.Consumers, so its default must be the workload's (2), not 0
// (which would turn the consumer-behind check off).
func TestConfigDefaultsNameTheConsumers(t *testing.T) {
	cfg := Config{}.withDefaults()
	if cfg.Consumers != 2 || cfg.Producers != 4 {
		t.Fatalf("defaults: %d consumers, %d producers", cfg.Consumers, cfg.Producers)
	}
}

// TestReproduceLineNamesTheSettings: the report's "reproduce" line carries
// every setting other than the defaults that shapes the run, so it repeats
// the same experiment (it used to drop --fsync).
func TestReproduceLineNamesTheSettings(t *testing.T) {
	if f := (Config{}).withDefaults().reproduceFlags(); len(f) != 0 {
		t.Fatalf("defaults give flags %v", f)
	}
	cfg := Config{Nodes: 5, Fsync: "interval=50ms", SessionTimeout: 2 * time.Second, Producers: 1, Consumers: 3, Interval: time.Millisecond,
		Compression: segment.CodecLZ4, Compact: true}.withDefaults()
	var b strings.Builder
	(&Result{Seed: 7, Duration: 8 * time.Minute, Flags: cfg.reproduceFlags()}).WriteSummary(&b)
	want := "reproduce: scripts/chaos.sh --seed 7 --duration 8m0s --nodes 5 --fsync interval=50ms --session-timeout 2s --producers 1 --consumers 3 --interval 1ms --compression lz4 --compact\n"
	if !strings.Contains(b.String(), want) {
		t.Fatalf("summary:\n%s\nwant the line %q", b.String(), want)
	}
}
