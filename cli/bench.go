package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"paymentlog/bench"
	"paymentlog/client"
	"paymentlog/quic"
)

func init() { commands = append(commands, benchCommand) }

func benchEnv(name string) []string { return envVar("BENCH_" + name) }

func benchCommand() *ucli.Command {
	d := bench.DefaultConfig()
	t, f := d.Throughput, d.Failover
	return &ucli.Command{
		Name:  "bench",
		Usage: "measure replication throughput, latency, leader and controller failover, rolling restarts, and the raw QUIC ceiling",
		UsageText: "paymentlog bench [all|throughput|failover|controller-failover|rolling|transport|cpu] [flags]\n\n" +
			"Without --bootstrap it starts its own local cluster of child processes (temp data dirs, free ports,\n" +
			"certificates) and removes it afterwards, also on Ctrl-C. `cpu` (not part of all) runs no cluster: it\n" +
			"times a fixed piece of arithmetic every 2 ms for --duration and lists the windows where the CPU ran slowly.\n" +
			"`rolling` (not part of all; local cluster only) restarts every node in turn under the failover load, as\n" +
			"`scripts/cluster.sh roll` does (/safe-to-stop, SIGTERM, start, /readyz; the active controller last), and\n" +
			"reports each restart's controlled shutdown, time to ready, unavailability, produce errors and latency.",
		Flags: []ucli.Flag{
			// Cluster.
			&ucli.StringFlag{Name: "bootstrap", Usage: "run against this existing cluster (host:port,...) instead of a local one", EnvVars: benchEnv("BOOTSTRAP")},
			// The client commands' variables too (what `scripts/cluster.sh env`
			// exports): only used with --bootstrap.
			&ucli.StringFlag{Name: "tls-dir", Usage: "with --bootstrap: directory with ca.crt and the client certificate", EnvVars: append(benchEnv("TLS_DIR"), envVar("TLS_DIR")...)},
			&ucli.StringFlag{Name: "cert-name", Value: client.DefaultCertName, Usage: "with --tls-dir: certificate name", EnvVars: append(benchEnv("CERT_NAME"), envVar("CLIENT_CERT_NAME")...)},
			&ucli.StringFlag{Name: "kill-cmd", Usage: "with --bootstrap: command that SIGKILLs node {id}, e.g. 'scripts/cluster.sh kill {id}'", EnvVars: benchEnv("KILL_CMD")},
			&ucli.StringFlag{Name: "restart-cmd", Usage: "with --bootstrap: command that starts node {id} again, e.g. 'scripts/cluster.sh restart {id}'", EnvVars: benchEnv("RESTART_CMD")},
			&ucli.IntFlag{Name: "nodes", Value: d.Nodes, Usage: "local cluster size", EnvVars: benchEnv("NODES")},
			&ucli.BoolFlag{Name: "netns", Usage: "run each local node in its own network namespace on a bridge (root only), as on hosts of their own: a dead node's kernel then rate-limits the ICMP errors it sends each peer (loopback is exempt), which is what failure detection meets across hosts", EnvVars: benchEnv("NETNS")},
			&ucli.IntFlag{Name: "node-gomaxprocs", Value: d.NodeGOMAXPROCS, Usage: "GOMAXPROCS of each local node: -1 its share of this machine (CPUs ÷ nodes, at least 1, as in a container limited to that share; the bench's own producers and consumers then get the same share), 0 Go's default (every CPU), or N", EnvVars: benchEnv("NODE_GOMAXPROCS")},
			&ucli.StringSliceFlag{Name: "node-arg", Usage: "extra `node start` argument for the local cluster (repeat the flag for several, e.g. --node-arg=--session-timeout=500ms; each value is taken whole, commas included; PAYMENTLOG_BENCH_NODE_ARGS holds one)", EnvVars: benchEnv("NODE_ARGS")},
			&ucli.BoolFlag{Name: "keep", Usage: "keep the local cluster's directory (data, logs, certificates)", EnvVars: benchEnv("KEEP")},
			&ucli.StringFlag{Name: "base-dir", Usage: "where the local cluster's directory is made (default: the temp dir)", EnvVars: benchEnv("BASE_DIR")},
			&ucli.BoolFlag{Name: "metrics", Value: true, Usage: "give local nodes a --metrics-addr (/metrics, /debug/pprof): the report's QUIC loss lines come from it; listed in the JSON config (--metrics=false to turn off)", EnvVars: benchEnv("METRICS")},
			&ucli.StringFlag{Name: "binary", Usage: "paymentlog binary for the local cluster (default: this one)", EnvVars: benchEnv("BINARY"), Hidden: true},
			// Throughput.
			&ucli.IntFlag{Name: "record-size", Value: t.RecordSize, Usage: "record value size in bytes (>= 20)", EnvVars: benchEnv("RECORD_SIZE")},
			&ucli.Int64Flag{Name: "records", Usage: "throughput: stop after this many records instead of --duration", EnvVars: benchEnv("RECORDS")},
			&ucli.DurationFlag{Name: "duration", Value: t.Duration, Usage: "throughput: full-load run length", EnvVars: benchEnv("DURATION")},
			&ucli.IntFlag{Name: "partitions", Value: t.Partitions, Usage: "throughput topic partitions", EnvVars: benchEnv("PARTITIONS")},
			&ucli.IntFlag{Name: "replication-factor", Value: t.ReplicationFactor, Usage: "throughput topic replication factor", EnvVars: benchEnv("REPLICATION_FACTOR")},
			&ucli.IntFlag{Name: "min-insync-replicas", Value: t.MinISR, Usage: "throughput topic min ISR", EnvVars: benchEnv("MIN_INSYNC_REPLICAS")},
			&ucli.StringFlag{Name: "acks", Value: t.Acks, Usage: "all | 1 | 0", EnvVars: benchEnv("ACKS")},
			&ucli.IntFlag{Name: "producers", Value: t.Producers, Usage: "concurrent producers, each with its own connection", EnvVars: benchEnv("PRODUCERS")},
			&ucli.StringFlag{Name: "fsync", Value: t.Fsync, Usage: "local cluster durability: always | interval=200ms | never", EnvVars: benchEnv("FSYNC")},
			&ucli.BoolFlag{Name: "idempotence", Value: t.Idempotence, Usage: "idempotent producers (--idempotence=false to turn off)", EnvVars: benchEnv("IDEMPOTENCE")},
			&ucli.IntFlag{Name: "batch-bytes", Value: t.BatchBytes, Usage: "producer batch size", EnvVars: benchEnv("BATCH_BYTES")},
			&ucli.DurationFlag{Name: "linger", Value: t.Linger, Usage: "producer linger", EnvVars: benchEnv("LINGER")},
			&ucli.IntFlag{Name: "max-in-flight", Value: t.MaxInFlight, Usage: "produce requests outstanding per partition", EnvVars: benchEnv("MAX_IN_FLIGHT")},
			&ucli.Int64Flag{Name: "buffer-bytes", Value: t.BufferBytes, Usage: "unacknowledged bytes per producer before Produce blocks", EnvVars: benchEnv("BUFFER_BYTES")},
			&ucli.Float64Flag{Name: "latency-rate", Usage: "records/s of the paced latency run (0: half the measured full-load rate)", EnvVars: benchEnv("LATENCY_RATE")},
			&ucli.DurationFlag{Name: "half-load-duration", Value: t.HalfLoadDuration, Usage: "latency run at half the measured rate (0: skip)", EnvVars: benchEnv("HALF_LOAD_DURATION")},
			&ucli.IntFlag{Name: "rounds", Value: t.Rounds, Usage: "repeat the throughput benchmark (full load, read-back, half load) this many times on fresh topics and report the median of each figure (a noisy machine scatters single runs)", EnvVars: benchEnv("ROUNDS")},
			&ucli.BoolFlag{Name: "consume-check", Value: t.ConsumeCheck, Usage: "read the full-load run back (consume throughput)", EnvVars: benchEnv("CONSUME_CHECK")},
			&ucli.StringFlag{Name: "compression", Value: t.Compression, Usage: "throughput: the producers' batch compression: none | lz4 | zstd (MB/s stays payload bytes; the report adds the bytes the leaders stored per payload byte and the CPU per payload MB)", EnvVars: benchEnv("COMPRESSION")},
			&ucli.StringFlag{Name: "payload", Value: t.Payload, Usage: "throughput: record values after the bench's 20-byte header: random (incompressible bytes) | payments (JSON payment events of --record-size: ids, amounts, merchants, currencies, statuses, timestamps; what compression is for)", EnvVars: benchEnv("PAYLOAD")},
			&ucli.BoolFlag{Name: "cpu-probe", Value: t.CPUProbe, Usage: "during the latency run, time a fixed 10 µs piece of arithmetic every 2 ms to find windows where the machine's CPU itself ran slowly; reports them and the latency of the records clear of them (--cpu-probe=false to turn off)", EnvVars: benchEnv("CPU_PROBE")},
			// Transport.
			&ucli.DurationFlag{Name: "transport-duration", Value: d.Transport.Duration, Usage: "raw QUIC and raw disk round length", EnvVars: benchEnv("TRANSPORT_DURATION")},
			&ucli.IntFlag{Name: "transport-rounds", Value: d.Transport.Rounds, Usage: "raw QUIC and raw disk rounds (median reported)", EnvVars: benchEnv("TRANSPORT_ROUNDS")},
			&ucli.IntFlag{Name: "transport-streams", Value: d.Transport.Streams, Usage: "raw QUIC parallel streams", EnvVars: benchEnv("TRANSPORT_STREAMS")},
			// Failover.
			&ucli.IntFlag{Name: "trials", Value: f.Trials, Usage: "failover (and controller-failover) trials", EnvVars: benchEnv("TRIALS")},
			&ucli.IntFlag{Name: "controller-trials", Value: -1, Usage: "controller-failover trials (default: --trials)", EnvVars: benchEnv("CONTROLLER_TRIALS")},
			&ucli.IntFlag{Name: "failover-rate", Value: f.Rate, Usage: "failover: records/s of the steady acks=all load", EnvVars: benchEnv("FAILOVER_RATE")},
			&ucli.IntFlag{Name: "failover-record-size", Value: f.RecordSize, Usage: "failover: record value size", EnvVars: benchEnv("FAILOVER_RECORD_SIZE")},
			&ucli.IntFlag{Name: "failover-partitions", Value: f.Partitions, Usage: "failover topic partitions", EnvVars: benchEnv("FAILOVER_PARTITIONS")},
			&ucli.DurationFlag{Name: "failover-timeout", Value: f.Timeout, Usage: "give up on a failover step after this long", EnvVars: benchEnv("FAILOVER_TIMEOUT")},
			&ucli.DurationFlag{Name: "keep-slow-trials", Value: f.KeepSlowOver, Usage: "local cluster: keep the node log lines of every failover or controller-failover trial slower than this (or failed) in a directory the report names (0: never)", EnvVars: benchEnv("KEEP_SLOW_TRIALS")},
			&ucli.IntFlag{Name: "roll-rounds", Value: d.Rolling.Rounds, Usage: "rolling: full rolling restarts of every node", EnvVars: benchEnv("ROLL_ROUNDS")},
			&ucli.DurationFlag{Name: "poll-interval", Value: f.Poll, Usage: "metadata watcher interval (event time resolution)", EnvVars: benchEnv("POLL_INTERVAL")},
			// Output.
			&ucli.StringFlag{Name: "json", Usage: "write every figure, the configuration and versions to this JSON `FILE`", EnvVars: benchEnv("JSON")},
			&ucli.StringFlag{Name: "plot", Usage: "write acknowledged records per 50 ms over the failover run to this `FILE.svg`", EnvVars: benchEnv("PLOT")},
			&ucli.StringFlag{Name: "latency-trace", Usage: "write one CSV row per acknowledged record of the paced latency run (start time in unix µs, latency, how late the sender was, partition, producer) to this `FILE`: when the tail happened, on a clock perf and qlog share", EnvVars: benchEnv("LATENCY_TRACE")},
			&ucli.StringFlag{Name: "profile-dir", Usage: "save CPU profiles of the bench and every local node during the full-load run and (latency.*) the paced latency run, and the nodes' allocation profiles, in this `DIR`", EnvVars: benchEnv("PROFILE_DIR")},
			&ucli.StringFlag{Name: "log-level", Value: "error", Usage: "bench and client log level on stderr: debug | info | warn | error", EnvVars: benchEnv("LOG_LEVEL")},
		},
		Action: func(c *ucli.Context) error {
			cfg, err := parseBenchOptions(c)
			var ce *bench.ConfigError
			if errors.As(err, &ce) {
				return usageError("bench: --%s: %s", ce.Field, ce.Reason)
			}
			if err != nil {
				return usageError("%v", err)
			}
			return runBench(c.Context, cfg, c.App.Writer, c.App.ErrWriter)
		},
	}
}

func parseBenchOptions(c *ucli.Context) (bench.Config, error) {
	cfg := bench.DefaultConfig()
	if c.NArg() > 1 {
		return cfg, fmt.Errorf("expected at most one benchmark name, got %s", strings.Join(c.Args().Slice(), " "))
	}
	mode, err := bench.ParseMode(c.Args().First())
	if err != nil {
		return cfg, err
	}
	cfg.Mode = mode
	cfg.Version = Version
	if b := c.String("bootstrap"); b != "" {
		cfg.Bootstrap = client.ParseBootstrap(b)
		if dir := c.String("tls-dir"); dir != "" {
			cfg.TLS = quic.TLSConfig{Dir: dir, Name: c.String("cert-name")}
		}
	}
	cfg.KillCmd, cfg.RestartCmd = c.String("kill-cmd"), c.String("restart-cmd")
	cfg.Nodes = c.Int("nodes")
	cfg.NodeArgs = c.StringSlice("node-arg")
	cfg.NodeGOMAXPROCS = c.Int("node-gomaxprocs")
	cfg.NetNS = c.Bool("netns")
	cfg.KeepDir, cfg.BaseDir, cfg.Metrics, cfg.Binary = c.Bool("keep"), c.String("base-dir"), c.Bool("metrics"), c.String("binary")

	t := &cfg.Throughput
	t.RecordSize = c.Int("record-size")
	t.Records = c.Int64("records")
	t.Duration = c.Duration("duration")
	t.Partitions = c.Int("partitions")
	t.ReplicationFactor = c.Int("replication-factor")
	t.MinISR = c.Int("min-insync-replicas")
	t.Acks = c.String("acks")
	t.Producers = c.Int("producers")
	t.Fsync = c.String("fsync")
	t.Idempotence = c.Bool("idempotence")
	t.BatchBytes = c.Int("batch-bytes")
	t.Linger = c.Duration("linger")
	t.MaxInFlight = c.Int("max-in-flight")
	t.BufferBytes = c.Int64("buffer-bytes")
	t.HalfLoadDuration = c.Duration("half-load-duration")
	t.LatencyRate = c.Float64("latency-rate")
	t.Rounds = c.Int("rounds")
	t.ConsumeCheck = c.Bool("consume-check")
	t.CPUProbe = c.Bool("cpu-probe")
	t.Compression = c.String("compression")
	t.Payload = c.String("payload")

	cfg.Transport.Duration = c.Duration("transport-duration")
	cfg.Transport.Rounds = c.Int("transport-rounds")
	cfg.Transport.Streams = c.Int("transport-streams")

	f := &cfg.Failover
	f.Trials = c.Int("trials")
	f.Rate = c.Int("failover-rate")
	f.RecordSize = c.Int("failover-record-size")
	f.Partitions = c.Int("failover-partitions")
	f.Timeout = c.Duration("failover-timeout")
	f.Poll = c.Duration("poll-interval")
	f.KeepSlowOver = c.Duration("keep-slow-trials")
	cfg.Controller.Trials = f.Trials
	if n := c.Int("controller-trials"); n >= 0 {
		cfg.Controller.Trials = n
	}
	cfg.Controller.Timeout = f.Timeout
	cfg.Rolling.Rounds = c.Int("roll-rounds")

	cfg.JSONPath, cfg.PlotPath, cfg.ProfileDir = c.String("json"), c.String("plot"), c.String("profile-dir")
	cfg.LatencyTracePath = c.String("latency-trace")
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(c.String("log-level"))); err != nil {
		return cfg, fmt.Errorf("--log-level: %w", err)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: lv}))
	return cfg, cfg.Validate()
}

// runBench runs the benchmark, prints the summary table on stdout and the
// progress on stderr. It fails when a phase failed or a record was lost.
func runBench(ctx context.Context, cfg bench.Config, stdout, stderr io.Writer) error {
	cfg.Out, cfg.Progress = stdout, stderr // a terminal stderr gets a progress bar
	rep, err := bench.Run(ctx, cfg)
	if rep != nil {
		rep.WriteTable(stdout)
		if cfg.JSONPath != "" {
			fmt.Fprintf(stderr, "bench: wrote %s\n", cfg.JSONPath)
		}
		if cfg.PlotPath != "" && rep.Failover != nil {
			fmt.Fprintf(stderr, "bench: wrote %s\n", cfg.PlotPath)
		}
		if cfg.LatencyTracePath != "" && rep.Throughput != nil && rep.Throughput.HalfLoad != nil {
			fmt.Fprintf(stderr, "bench: wrote %s\n", cfg.LatencyTracePath)
		}
	}
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}
