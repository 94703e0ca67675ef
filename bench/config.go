package bench

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"paymentlog/client"
	"paymentlog/quic"
	"paymentlog/segment"
)

// Mode names a benchmark (or all of them).
type Mode string

// Modes, in the order All runs them.
const (
	ModeAll                Mode = "all"
	ModeTransport          Mode = "transport"
	ModeThroughput         Mode = "throughput"
	ModeFailover           Mode = "failover"
	ModeControllerFailover Mode = "controller-failover"
	// ModeCPU runs only the CPU speed probe (cpuspeed.go) for the
	// throughput --duration, with no cluster: whether this machine's CPU
	// slows down by itself. All does not include it.
	ModeCPU Mode = "cpu"
	// ModeRolling restarts every node of the local cluster in turn
	// (controlled shutdown, the active controller last) under the failover
	// load (rolling.go). All does not include it: a roll is a restart
	// procedure, not a fault, and it holds no target.
	ModeRolling Mode = "rolling"
)

// ParseMode parses a positional mode argument; empty means all.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case "":
		return ModeAll, nil
	case ModeAll, ModeTransport, ModeThroughput, ModeFailover, ModeControllerFailover, ModeCPU, ModeRolling:
		return m, nil
	}
	return "", fmt.Errorf("unknown benchmark %q (want all, throughput, failover, controller-failover, rolling, transport or cpu)", s)
}

// runs reports whether mode m includes benchmark x.
func (m Mode) runs(x Mode) bool {
	return m == x || (m == ModeAll && x != ModeCPU && x != ModeRolling)
}

// Config is a whole `paymentlog bench` run. DefaultConfig fills every field;
// the defaults make `paymentlog bench` (all) finish in about two minutes.
type Config struct {
	Mode    Mode
	Version string // paymentlog version, for the report

	// Cluster: with no Bootstrap, a local cluster of Nodes child processes of
	// Binary is started (and removed afterwards).
	Bootstrap  []string
	TLS        quic.TLSConfig // for an external cluster
	KillCmd    string         // e.g. "scripts/cluster.sh kill {id}"; required for failover with Bootstrap
	RestartCmd string         // e.g. "scripts/cluster.sh restart {id}"
	Binary     string         // paymentlog binary for the local cluster; default os.Executable()
	Nodes      int            // local cluster size; 3
	NodeArgs   []string       // extra `node start` flags for the local cluster
	// NodeGOMAXPROCS is each local node's GOMAXPROCS: > 0 that many, 0 Go's
	// default (every CPU), < 0 the node's share of the machine,
	// nodeGOMAXPROCS (DefaultConfig).
	NodeGOMAXPROCS int
	// NetNS runs each local node in its own network namespace on a bridge
	// (root only), as on hosts of their own: the dead node's kernel then
	// rate-limits the ICMP errors it sends each peer (loopback is exempt),
	// which is what failure detection meets across hosts.
	NetNS   bool
	KeepDir bool   // keep the local cluster's directory
	BaseDir string // where the local cluster's directory goes; default os.TempDir()
	Metrics bool   // give local nodes --metrics-addr (/metrics: QUIC loss; pprof: --profile-dir); reported in the output

	Throughput ThroughputConfig
	Transport  TransportConfig
	Failover   FailoverConfig
	Controller ControllerFailoverConfig
	Rolling    RollingConfig

	// ProfileDir, when set, receives CPU profiles of the bench and of every
	// local node during the full-load throughput run, and the nodes'
	// allocation profiles after it (implies Metrics).
	ProfileDir string

	JSONPath string // --json FILE
	PlotPath string // --plot FILE.svg
	// LatencyTracePath receives one CSV row per acknowledged record of the
	// paced latency run (--latency-trace FILE; format: latencyTrace).
	LatencyTracePath string

	// Out receives the summary table; Progress receives the progress bar (when
	// it is a terminal) or one line per phase.
	Out      io.Writer
	Progress io.Writer
	Logger   *slog.Logger
}

// ThroughputConfig is the throughput (and latency) benchmark.
type ThroughputConfig struct {
	RecordSize        int           // bytes of value per record; 1024 (at least 20: the header the bench embeds)
	Records           int64         // stop after this many records; 0: run for Duration
	Duration          time.Duration // 8s
	Partitions        int           // 6
	ReplicationFactor int           // 3
	MinISR            int           // 2
	Acks              string        // all
	Producers         int           // 2 (each with its own client connection)
	Fsync             string        // local cluster's --fsync: always
	Idempotence       bool          // true
	BatchBytes        int           // producer batch size; 1 MiB
	Linger            time.Duration // the client's default, 5ms; 0: send at once
	MaxInFlight       int           // per partition; 5
	// BufferBytes bounds each producer's unacknowledged records; 16 MiB. At
	// full load the queue it allows is what produce latency mostly measures.
	BufferBytes int64
	// HalfLoadDuration is the length of the second run at half the measured
	// rate, which gives the latency figures (produce and end to end); 4s, 0: skip.
	HalfLoadDuration time.Duration
	// LatencyRate, when > 0, paces the latency run at this many records/s
	// instead of half the measured rate.
	LatencyRate float64
	// Rounds repeats the full-load run, its read-back and the half-load run
	// on a fresh topic each time; the figures reported (and judged against
	// the targets) are then the medians of the rounds; 1.
	Rounds int
	// ConsumeCheck reads the first run back with one consumer, for consume throughput; true.
	ConsumeCheck bool
	// CPUProbe times a fixed 10 µs piece of arithmetic every 2 ms during the
	// latency run, to find the windows where the machine's CPU itself ran
	// slowly (cpuspeed.go); true.
	CPUProbe bool
	// Compression is the producers' batch compression: none, lz4 or zstd;
	// none. MB/s stays payload (uncompressed) bytes; the report adds the
	// bytes the leaders stored per payload byte.
	Compression string
	// Payload is what record values hold after the bench header: random
	// (incompressible bytes) or payments (JSON payment events); random.
	Payload string
}

// TransportConfig is the raw QUIC baseline.
type TransportConfig struct {
	Duration time.Duration // per round; 1s
	Rounds   int           // median of; 3
	Streams  int           // parallel streams on one connection; 1
	Chunk    int           // bytes per write; 64 KiB
}

// FailoverConfig is the leader failover benchmark.
type FailoverConfig struct {
	Trials     int           // 10
	Rate       int           // records per second, all partitions together; 3000
	RecordSize int           // 256
	Partitions int           // 3; the victim is always partition 0's leader
	Timeout    time.Duration // per step of a trial; 15s
	Poll       time.Duration // metadata watcher interval; 5ms
	// KeepSlowOver keeps the local nodes' log lines of every failover and
	// controller-failover trial that took longer than this, or failed
	// (slowtrial.go); 1s, the p99 target; 0: never.
	KeepSlowOver time.Duration
}

// RollingConfig is the rolling restart benchmark (rolling.go); its load,
// topic, step timeout and poll interval are the failover benchmark's.
type RollingConfig struct {
	Rounds int // full rolls of every node; 1
}

// ControllerFailoverConfig is the controller failover benchmark.
type ControllerFailoverConfig struct {
	Trials  int           // 10
	Timeout time.Duration // per trial; 15s
	Attempt time.Duration // bound of one CreateTopic request; 1s
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		Mode:           ModeAll,
		Nodes:          3,
		NodeGOMAXPROCS: -1,
		Throughput: ThroughputConfig{
			RecordSize:        1024,
			Duration:          8 * time.Second,
			Partitions:        6,
			ReplicationFactor: 3,
			MinISR:            2,
			Acks:              "all",
			Producers:         2,
			Fsync:             "always",
			Idempotence:       true,
			BatchBytes:        1 << 20,
			Linger:            client.DefaultLinger,
			MaxInFlight:       5,
			BufferBytes:       16 << 20,
			HalfLoadDuration:  4 * time.Second,
			Rounds:            1,
			ConsumeCheck:      true,
			CPUProbe:          true,
			Compression:       "none",
			Payload:           PayloadRandom,
		},
		Transport: TransportConfig{Duration: time.Second, Rounds: 3, Streams: 1, Chunk: 64 << 10},
		Failover: FailoverConfig{
			Trials: 10, Rate: 3000, RecordSize: 256, Partitions: 3,
			Timeout: 15 * time.Second, Poll: 5 * time.Millisecond, KeepSlowOver: time.Second,
		},
		Controller: ControllerFailoverConfig{Trials: 10, Timeout: 15 * time.Second, Attempt: time.Second},
		Rolling:    RollingConfig{Rounds: 1},
	}
}

// ConfigError names the invalid field.
type ConfigError struct {
	Field string // the `paymentlog bench` flag, without its dashes

	Reason string
}

func (e *ConfigError) Error() string { return "bench: " + e.Field + ": " + e.Reason }

// payloadHeader is the smallest record value: the bench header (payload.go).
const payloadHeader = 20

// Validate reports the first invalid field.
func (c Config) Validate() error {
	t := c.Throughput
	switch {
	case c.Nodes < 1:
		return &ConfigError{"nodes", "must be >= 1"}
	case len(c.Bootstrap) > 0 && (c.Mode == ModeFailover || c.Mode == ModeControllerFailover) && (c.KillCmd == "" || c.RestartCmd == ""):
		return &ConfigError{"kill-cmd", fmt.Sprintf("--kill-cmd and --restart-cmd are required for %s against --bootstrap", c.Mode)}
	case c.Mode == ModeRolling && len(c.Bootstrap) > 0:
		return &ConfigError{"bootstrap", "rolling runs on the bench's own local cluster only (it signals the nodes and reads their health endpoints)"}
	case c.Mode == ModeRolling && !c.Metrics:
		return &ConfigError{"metrics", "rolling needs the nodes' health endpoints, served beside /metrics (--metrics=false turns them off)"}
	case c.Mode.runs(ModeRolling) && c.Rolling.Rounds < 1:
		return &ConfigError{"roll-rounds", "must be >= 1"}
	case len(c.Bootstrap) == 0 && c.Nodes < 3 && (c.Mode.runs(ModeFailover) || c.Mode.runs(ModeControllerFailover) || c.Mode.runs(ModeRolling)):
		return &ConfigError{"nodes", "failover benchmarks need at least 3 nodes (RF 3, min ISR 2)"}
	case t.RecordSize < payloadHeader:
		return &ConfigError{"record-size", fmt.Sprintf("must be >= %d", payloadHeader)}
	case t.Records < 0:
		return &ConfigError{"records", "must be >= 0"}
	case t.Records == 0 && t.Duration <= 0:
		return &ConfigError{"duration", "must be > 0 without --records"}
	case t.Partitions < 1:
		return &ConfigError{"partitions", "must be >= 1"}
	case t.ReplicationFactor < 1 || (len(c.Bootstrap) == 0 && t.ReplicationFactor > c.Nodes):
		return &ConfigError{"replication-factor", "must be between 1 and the number of nodes"}
	case t.MinISR < 1 || t.MinISR > t.ReplicationFactor:
		return &ConfigError{"min-insync-replicas", "must be between 1 and the replication factor"}
	case t.Rounds < 1:
		return &ConfigError{"rounds", "must be >= 1"}
	case t.Producers < 1:
		return &ConfigError{"producers", "must be >= 1"}
	case t.MaxInFlight < 1:
		return &ConfigError{"max-in-flight", "must be >= 1"}
	case c.Transport.Duration <= 0:
		return &ConfigError{"transport-duration", "must be > 0"}
	case c.Transport.Rounds < 1:
		return &ConfigError{"transport-rounds", "must be >= 1"}
	case c.Transport.Streams < 1:
		return &ConfigError{"transport-streams", "must be >= 1"}
	case c.Transport.Chunk < 1:
		return &ConfigError{"transport-chunk", "must be >= 1"}
	// A failover benchmark of no trials kills nothing and would report
	// empty figures as if it had run.
	case c.Failover.Trials < 1 && c.Mode.runs(ModeFailover):
		return &ConfigError{"trials", fmt.Sprintf("must be >= 1 (%s kills a leader once per trial)", c.Mode)}
	case c.Failover.Trials < 0:
		return &ConfigError{"trials", "must be >= 0"}
	case c.Failover.Rate < 1:
		return &ConfigError{"failover-rate", "must be >= 1"}
	case c.Failover.RecordSize < payloadHeader:
		return &ConfigError{"failover-record-size", fmt.Sprintf("must be >= %d", payloadHeader)}
	case c.Failover.Partitions < 1:
		return &ConfigError{"failover-partitions", "must be >= 1"}
	case c.Controller.Trials < 1 && c.Mode.runs(ModeControllerFailover):
		return &ConfigError{"controller-trials", fmt.Sprintf("must be >= 1 (%s kills the active controller once per trial; it defaults to --trials)", c.Mode)}
	case c.Controller.Trials < 0:
		return &ConfigError{"controller-trials", "must be >= 0"}
	}
	if _, err := client.ParseAcks(t.Acks); err != nil {
		return &ConfigError{"acks", err.Error()}
	}
	if _, err := segment.ParseCodec(t.Compression); err != nil {
		return &ConfigError{"compression", err.Error()}
	}
	if _, err := parsePayloadKind(t.Payload); err != nil {
		return &ConfigError{"payload", err.Error()}
	}
	return nil
}

// killCmd expands a --kill-cmd/--restart-cmd template for node id.
func expandCmd(tmpl string, id int32) string {
	return strings.ReplaceAll(tmpl, "{id}", fmt.Sprint(id))
}
