package chaos

import "testing"

// TestConfigDefaultsNameTheConsumers: History.Consumers comes from
// Config.Consumers, so its default must be the workload's (2), not 0
// (which would turn the consumer-behind check off).
func TestConfigDefaultsNameTheConsumers(t *testing.T) {
	cfg := Config{}.withDefaults()
	if cfg.Consumers != 2 || cfg.Producers != 4 {
		t.Fatalf("defaults: %d consumers, %d producers", cfg.Consumers, cfg.Producers)
	}
}
