package cli

import (
	"bytes"
	"context"
	"testing"
	"time"

	"paymentlog/node"
)

// node start takes the retention knobs as flags and PAYMENTLOG_* variables,
// with Kafka's 5 minute check interval, "forever" and a day of producer id
// expiry as defaults; likewise the log cleaner's interval, 15 seconds by
// default, 0 turning the cleaner off (-1 in the node's config).
func TestNodeStartRetentionFlags(t *testing.T) {
	start := func(t *testing.T, extra ...string) node.Config {
		t.Helper()
		defer func(orig func(context.Context, node.Config) (runningNode, error)) { startNode = orig }(startNode)
		got := make(chan node.Config, 1)
		startNode = func(_ context.Context, cfg node.Config) (runningNode, error) {
			got <- cfg
			return failingShutdownNode{done: make(chan struct{})}, nil
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		args := append([]string{"paymentlog", "node", "start", "--id", "1", "--addr", "127.0.0.1:1",
			"--data-dir", t.TempDir(), "--controllers", "1@127.0.0.1:1"}, extra...)
		var stdout, stderr bytes.Buffer
		code := make(chan int, 1)
		go func() { code <- RunContext(ctx, args, &stdout, &stderr) }()
		select {
		case cfg := <-got:
			cancel()
			<-code
			return cfg
		case c := <-code:
			t.Fatalf("exit %d: %s", c, stderr.String())
		case <-time.After(10 * time.Second):
			t.Fatal("node start did not start the node")
		}
		return node.Config{}
	}
	cfg := start(t)
	if cfg.RetentionCheckInterval != 5*time.Minute || cfg.RetentionMs != -1 || cfg.RetentionBytes != -1 || cfg.ProducerIDExpiration != 24*time.Hour {
		t.Fatalf("defaults: interval %v, ms %d, bytes %d", cfg.RetentionCheckInterval, cfg.RetentionMs, cfg.RetentionBytes)
	}
	if cfg.LogCleanerInterval != 15*time.Second || cfg.LogCleanerIOMaxBytesPerSec != 0 || cfg.LogCleanerDedupeBufferSize != 128<<20 {
		t.Fatalf("default log cleaner interval %v, io max %d, dedupe buffer %d", cfg.LogCleanerInterval, cfg.LogCleanerIOMaxBytesPerSec, cfg.LogCleanerDedupeBufferSize)
	}
	if cfg = start(t, "--log-cleaner-dedupe-buffer-size", "16777216"); cfg.LogCleanerDedupeBufferSize != 16<<20 {
		t.Fatalf("--log-cleaner-dedupe-buffer-size: %d", cfg.LogCleanerDedupeBufferSize)
	}
	if cfg.LogCleanerThreads != 1 {
		t.Fatalf("default log cleaner threads %d, want 1", cfg.LogCleanerThreads)
	}
	if cfg = start(t, "--log-cleaner-threads", "4"); cfg.LogCleanerThreads != 4 {
		t.Fatalf("--log-cleaner-threads 4: %d", cfg.LogCleanerThreads)
	}
	if cfg = start(t, "--log-cleaner-io-max-bytes-per-second", "10485760"); cfg.LogCleanerIOMaxBytesPerSec != 10<<20 {
		t.Fatalf("--log-cleaner-io-max-bytes-per-second: %d", cfg.LogCleanerIOMaxBytesPerSec)
	}
	if cfg = start(t, "--log-cleaner-interval", "1m"); cfg.LogCleanerInterval != time.Minute {
		t.Fatalf("--log-cleaner-interval 1m: %v", cfg.LogCleanerInterval)
	}
	if cfg = start(t, "--log-cleaner-interval", "0"); cfg.LogCleanerInterval != -1 {
		t.Fatalf("--log-cleaner-interval 0: %v, want -1 (off)", cfg.LogCleanerInterval)
	}
	cfg = start(t, "--retention-check-interval", "30s", "--retention-ms", "3600000", "--retention-bytes", "1048576",
		"--producer-id-expiration", "2h")
	if cfg.RetentionCheckInterval != 30*time.Second || cfg.RetentionMs != 3600000 || cfg.RetentionBytes != 1<<20 ||
		cfg.ProducerIDExpiration != 2*time.Hour {
		t.Fatalf("flags: interval %v, ms %d, bytes %d", cfg.RetentionCheckInterval, cfg.RetentionMs, cfg.RetentionBytes)
	}
	t.Setenv("PAYMENTLOG_RETENTION_CHECK_INTERVAL", "1m")
	t.Setenv("PAYMENTLOG_RETENTION_BYTES", "4096")
	t.Setenv("PAYMENTLOG_LOG_CLEANER_INTERVAL", "30s")
	t.Setenv("PAYMENTLOG_LOG_CLEANER_IO_MAX_BYTES_PER_SECOND", "1000000")
	t.Setenv("PAYMENTLOG_LOG_CLEANER_DEDUPE_BUFFER_SIZE", "4000000")
	t.Setenv("PAYMENTLOG_LOG_CLEANER_THREADS", "3")
	cfg = start(t)
	if cfg.RetentionCheckInterval != time.Minute || cfg.RetentionBytes != 4096 || cfg.LogCleanerInterval != 30*time.Second ||
		cfg.LogCleanerIOMaxBytesPerSec != 1000000 || cfg.LogCleanerDedupeBufferSize != 4000000 || cfg.LogCleanerThreads != 3 {
		t.Fatalf("env: interval %v, bytes %d, cleaner %v", cfg.RetentionCheckInterval, cfg.RetentionBytes, cfg.LogCleanerInterval)
	}
}

// A log cleaner key map too small to be useful is refused by name.
func TestNodeStartRefusesATinyDedupeBuffer(t *testing.T) {
	args := []string{"paymentlog", "node", "start", "--id", "1", "--addr", "127.0.0.1:1",
		"--data-dir", t.TempDir(), "--controllers", "1@127.0.0.1:1", "--log-cleaner-dedupe-buffer-size", "1000"}
	var stdout, stderr bytes.Buffer
	if code := RunContext(context.Background(), args, &stdout, &stderr); code == 0 || !bytes.Contains(stderr.Bytes(), []byte("--log-cleaner-dedupe-buffer-size: must be at least")) {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}

// Fewer than one log cleaner thread, or so many that a thread's share of
// the dedupe buffer falls under 1 MiB, is refused by name.
func TestNodeStartRefusesBadCleanerThreads(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--log-cleaner-threads", "0"}, "--log-cleaner-threads: must be at least 1"},
		{[]string{"--log-cleaner-threads", "-2"}, "--log-cleaner-threads: must be at least 1"},
		{[]string{"--log-cleaner-threads", "129"}, "log-cleaner-threads: each thread's share of the log cleaner's dedupe buffer (134217728 bytes) must be at least 1 MiB"},
		{[]string{"--log-cleaner-dedupe-buffer-size", "4194304", "--log-cleaner-threads", "5"}, "log-cleaner-threads: each thread's share"},
	} {
		args := append([]string{"paymentlog", "node", "start", "--id", "1", "--addr", "127.0.0.1:1",
			"--data-dir", t.TempDir(), "--controllers", "1@127.0.0.1:1"}, c.args...)
		var stdout, stderr bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a node it wrongly starts stops
		if code := RunContext(ctx, args, &stdout, &stderr); code == 0 || !bytes.Contains(stderr.Bytes(), []byte(c.want)) {
			t.Errorf("%v: exit %d, stderr %q", c.args, code, stderr.String())
		}
		cancel()
	}
}
