package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	ucli "github.com/urfave/cli/v2"

	"paymentlog/bench/chaos"
	"paymentlog/segment"
)

func init() { commands = append(commands, chaosCommand) }

func chaosEnv(name string) []string { return envVar("CHAOS_" + name) }

// chaosOptions are the flags of the hidden `paymentlog chaos` command (run by scripts/chaos.sh).
type chaosOptions struct {
	cfg chaos.Config
}

func chaosCommand() *ucli.Command {
	return &ucli.Command{
		Name:   "chaos",
		Hidden: true,
		Usage:  "fault-injection run against a local cluster of this binary (3 nodes, or --nodes; see bench/chaos); exit 1 on any anomaly",
		UsageText: "paymentlog chaos [--duration 10m] [--seed N] [--per-kind 20] [--kinds all|net|kill-leader,one-way,disk-stall,...] [--nodes 3] [--compact]\n\n" +
			"Without --duration it runs one deck: --per-kind faults of every kind. The seed fixes the schedule of faults;\n" +
			"it is printed at the start and in the report.",
		Flags: []ucli.Flag{
			&ucli.DurationFlag{Name: "duration", Usage: "inject faults for this long (0: one deck of --per-kind faults per kind)", EnvVars: chaosEnv("DURATION")},
			&ucli.Int64Flag{Name: "seed", Usage: "schedule seed (0: random, printed)", EnvVars: chaosEnv("SEED")},
			&ucli.IntFlag{Name: "per-kind", Value: 20, Usage: "faults of each kind per deck", EnvVars: chaosEnv("PER_KIND")},
			&ucli.StringFlag{Name: "kinds", Aliases: []string{"faults"}, Value: "all", Usage: "fault kinds, comma-separated: kill-node,kill-leader,kill-controller,pause,partition,torn-tail (all: these six, the default), " +
				"one-way (a node cannot send, or cannot receive), bridge (two nodes lose each other, both reach the third), degrade (loss, duplication, a slow queue and reordering on one node's link); net: those three; " +
				"shrink (the topic's replication factor down to 2 for a while, then back to 3: the dropped replicas copy their partitions again), " +
				"disk-stall (a node's file system frozen with fsfreeze for longer than the session timeout and --disk-stall-timeout, then thawed: every node then runs on a loop-mounted ext4 disk of its own). " +
				"Network faults need root and iproute2 (ip, tc); disk stalls root, mkfs.ext4, losetup, nsenter and fsfreeze", EnvVars: chaosEnv("KINDS")},
			&ucli.IntFlag{Name: "nodes", Value: 3, Usage: fmt.Sprintf("cluster size, 3 to %d: nodes 1-3 are the controllers, the others broker-only; the topic's 3 replicas per partition are spread over all of them", chaos.MaxNodes), EnvVars: chaosEnv("NODES")},
			&ucli.DurationFlag{Name: "session-timeout", Value: time.Second, Usage: "the nodes' --session-timeout", EnvVars: chaosEnv("SESSION_TIMEOUT")},
			&ucli.StringFlag{Name: "fsync", Value: "always", Usage: "the nodes' --fsync policy: always, interval=DURATION or never (torn tails then model a power loss that takes acknowledged records from one node)", EnvVars: chaosEnv("FSYNC")},
			&ucli.IntFlag{Name: "producers", Value: 4, Usage: "idempotent acks=all producers", EnvVars: chaosEnv("PRODUCERS")},
			&ucli.IntFlag{Name: "consumers", Value: 2, Usage: "continuous consumers", EnvVars: chaosEnv("CONSUMERS")},
			&ucli.DurationFlag{Name: "interval", Value: 5 * time.Millisecond, Usage: "per producer, time between records", EnvVars: chaosEnv("INTERVAL")},
			&ucli.StringFlag{Name: "compression", Value: "none", Usage: "the producers' compression: none, lz4 or zstd", EnvVars: chaosEnv("COMPRESSION")},
			&ucli.BoolFlag{Name: "compact", Usage: "make the topic compacted (cleanup.policy=compact, segment.bytes 1 MiB, min.cleanable.dirty.ratio 0, delete.retention.ms 1000; the nodes' --log-cleaner-interval 500ms): " +
				"the producers write records with keys (64 hot and 4096 cold ones per partition) and some tombstones, and the checker allows what the cleaner removes (superseded records, old tombstones) but never a key's latest record", EnvVars: chaosEnv("COMPACT")},
			&ucli.IntFlag{Name: "disk-mib", Value: chaos.DefaultDiskMiB, Usage: "with disk-stall: the size of each node's loop disk (a sparse image file)", EnvVars: chaosEnv("DISK_MIB")},
			&ucli.DurationFlag{Name: "disk-stall-timeout", Value: chaos.DefaultDiskStallTimeout, Usage: "with disk-stall: the nodes' --disk-stall-timeout, when the binary has that flag", EnvVars: chaosEnv("DISK_STALL_TIMEOUT")},
			&ucli.BoolFlag{Name: "keep", Usage: "keep the cluster directory (data, node logs) even when the run passes", EnvVars: chaosEnv("KEEP")},
			&ucli.StringFlag{Name: "base-dir", Usage: "where the cluster directory is made (default: the temp dir)", EnvVars: chaosEnv("BASE_DIR")},
			&ucli.StringFlag{Name: "binary", Usage: "paymentlog binary for the nodes (default: this one)", EnvVars: chaosEnv("BINARY"), Hidden: true},
			&ucli.BoolFlag{Name: "verbose", Usage: "log cluster lifecycle events to stderr", EnvVars: chaosEnv("VERBOSE")},
		},
		Action: func(c *ucli.Context) error {
			if c.Args().Len() > 0 {
				return usageError("chaos takes no arguments (usage: %s)", c.Command.UsageText)
			}
			kinds, err := chaos.ParseKinds(c.String("kinds"))
			if err != nil {
				return usageError("%v", err)
			}
			codec, err := segment.ParseCodec(c.String("compression"))
			if err != nil {
				return usageError("--compression: %v", err)
			}
			bin := c.String("binary")
			if bin == "" {
				if bin, err = os.Executable(); err != nil {
					return err
				}
			}
			if _, _, err := segment.ParseSyncPolicy(c.String("fsync")); err != nil {
				return usageError("chaos --fsync: %v", err)
			}
			// The run takes 0 for its defaults: a 0 given here would run
			// 20 faults per kind, or 4 producers, while saying nothing.
			for _, f := range []string{"per-kind", "producers", "consumers", "disk-mib"} {
				if n := c.Int(f); n < 1 {
					return usageError("chaos --%s must be at least 1, got %d", f, n)
				}
			}
			if d := c.Duration("disk-stall-timeout"); d <= 0 {
				return usageError("chaos --disk-stall-timeout must be positive, got %v", d)
			}
			if n := c.Int("nodes"); n < 3 || n > chaos.MaxNodes {
				return usageError("chaos --nodes must be from 3 to %d, got %d", chaos.MaxNodes, n)
			}
			o := chaosOptions{cfg: chaos.Config{
				Binary:           bin,
				Nodes:            c.Int("nodes"),
				Seed:             c.Int64("seed"),
				Duration:         c.Duration("duration"),
				PerKind:          c.Int("per-kind"),
				Kinds:            kinds,
				SessionTimeout:   c.Duration("session-timeout"),
				Fsync:            c.String("fsync"),
				Producers:        c.Int("producers"),
				Consumers:        c.Int("consumers"),
				Interval:         c.Duration("interval"),
				Compression:      codec,
				Compact:          c.Bool("compact"),
				DiskMiB:          c.Int("disk-mib"),
				DiskStallTimeout: c.Duration("disk-stall-timeout"),
				Keep:             c.Bool("keep"),
				KeepOnFailure:    true,
				BaseDir:          c.String("base-dir"),
			}}
			if c.Bool("verbose") {
				o.cfg.Logger = slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: slog.LevelInfo}))
			}
			return runChaos(c.Context, o, c.App.Writer)
		},
	}
}

// runChaos runs the chaos run, printing the schedule as it goes and the report.
func runChaos(ctx context.Context, o chaosOptions, stdout io.Writer) error {
	if o.cfg.Seed == 0 {
		o.cfg.Seed = time.Now().UnixNano() % 1_000_000_007
	}
	o.cfg.Out = stdout
	res, err := chaos.Run(ctx, o.cfg)
	if res != nil && res.Report != nil {
		fmt.Fprintln(stdout)
		res.WriteSummary(stdout)
	}
	if err != nil {
		return fmt.Errorf("chaos run (seed %d) did not complete: %w", o.cfg.Seed, err)
	}
	if !res.Report.OK() {
		return fmt.Errorf("chaos run (seed %d) found anomalies; cluster kept in %s", res.Seed, res.Dir)
	}
	return nil
}
