package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"paymentlog/node"
	"paymentlog/node/audit"
	"paymentlog/quic"
	"paymentlog/segment"
	"paymentlog/wire"
)

func init() { commands = append(commands, nodeCommand) }

// nodeOptions are the flags of `paymentlog node start`.
type nodeOptions struct {
	cfg      node.Config
	logLevel string
	logJSON  bool
	// scrubRestart: start the node again in this process after its scrub
	// found a corrupt batch (node_restart.go).
	scrubRestart bool
}

func envs(name string) []string { return []string{"PAYMENTLOG_" + name} }

func nodeCommand() *ucli.Command {
	d := node.DefaultConfig()
	return &ucli.Command{
		Name:  "node",
		Usage: "run a paymentlog node",
		Subcommands: []*ucli.Command{{
			Name:  "start",
			Usage: "start a node (broker, and controller if listed in --controllers)",
			Flags: []ucli.Flag{
				&ucli.IntFlag{Name: "id", Usage: "node id (unique, > 0)", EnvVars: envs("ID")},
				&ucli.StringFlag{Name: "addr", Usage: "UDP address to listen on (host:port)", EnvVars: envs("ADDR")},
				&ucli.StringFlag{Name: "rack", Usage: "the failure domain this node runs in (a rack, an availability zone; letters, digits, . _ : -): new replicas of a partition go to different racks", EnvVars: envs("RACK")},
				&ucli.StringFlag{Name: "data-dir", Usage: "data directory", EnvVars: envs("DATA_DIR")},
				&ucli.StringFlag{Name: "controllers", Usage: "controller quorum: id@host:port,...", EnvVars: envs("CONTROLLERS")},
				&ucli.StringFlag{Name: "metrics-addr", Usage: "HTTP address for /metrics and /debug/pprof (empty: off)", EnvVars: envs("METRICS_ADDR")},
				&ucli.StringFlag{Name: "tls-dir", Usage: "directory with ca.crt and <cert-name>.crt/.key (mutual TLS; a node certificate for --id, from: paymentlog cert issue --node-id ID); empty: dev mode, nothing authenticated or authorized", EnvVars: envs("TLS_DIR")},
				&ucli.StringFlag{Name: "cert-name", Usage: "certificate name in --tls-dir (default node<ID>)", EnvVars: envs("CERT_NAME")},
				&ucli.DurationFlag{Name: "tls-reload-interval", Value: quic.DefaultTLSReloadInterval, Usage: "how often to read ca.crt and the certificate again, so that rotated ones are used without a restart (SIGHUP reloads at once); 0: only on SIGHUP", EnvVars: envs("TLS_RELOAD_INTERVAL")},
				&ucli.StringFlag{Name: "authorizer", Value: node.AuthorizerNone, Usage: "acl: enforce the cluster's ACLs (paymentlog acl) on every client request (needs --tls-dir); none: every client certificate may do everything", EnvVars: envs("AUTHORIZER")},
				&ucli.StringFlag{Name: "super-users", Usage: "principals allowed everything under --authorizer acl, comma-separated: User:admin,User:ops (or admin,ops); node certificates always are", EnvVars: envs("SUPER_USERS")},
				&ucli.StringFlag{Name: "audit-log", Usage: "append the audit trail to this `FILE`: one JSON line, fsynced, per request that changes the cluster, per request refused by ACL, per client access to a topic (--audit-access-interval) and per node start, stop and TLS reload (empty: into the node's log)", EnvVars: envs("AUDIT_LOG")},
				&ucli.DurationFlag{Name: "audit-access-interval", Value: d.AuditAccessInterval, Usage: "record in the audit trail each client's first read and write of a topic (per principal, address and topic), and again after this long if it goes on (0: record no reads or writes)", EnvVars: envs("AUDIT_ACCESS_INTERVAL")},
				&ucli.Int64Flag{Name: "audit-log-max-bytes", Value: d.AuditLogMaxBytes, Usage: "rotate --audit-log before a line would take it past this size: it is renamed FILE.<UTC time> and a new FILE continues its hash chain (0: never rotate)", EnvVars: envs("AUDIT_LOG_MAX_BYTES")},
				&ucli.IntFlag{Name: "audit-log-max-files", Usage: "rotated audit files to keep, the oldest deleted first (0: keep them all; PCI DSS asks for a year of audit trail, so deleting is your retention choice)", EnvVars: envs("AUDIT_LOG_MAX_FILES")},
				&ucli.StringFlag{Name: "audit-syslog", Usage: "also send every audit line to this syslog collector (`tls://HOST:PORT`, RFC 5425, 6514 the registered port; or tcp://HOST:PORT or udp://HOST:PORT, unprotected in transit; RFC 5424, facility authpriv), from a queue that never holds a request back", EnvVars: envs("AUDIT_SYSLOG")},
				&ucli.StringFlag{Name: "audit-syslog-ca", Usage: "with --audit-syslog tls://: the CAs (PEM `FILE`) the collector's certificate must chain to, read again at every reconnect (empty: the system roots)", EnvVars: envs("AUDIT_SYSLOG_CA")},
				&ucli.StringFlag{Name: "audit-syslog-server-name", Usage: "with --audit-syslog tls://: the `NAME` the collector's certificate must be for (empty: the HOST of --audit-syslog)", EnvVars: envs("AUDIT_SYSLOG_SERVER_NAME")},
				&ucli.StringFlag{Name: "audit-syslog-cert", Usage: "with --audit-syslog tls://: the client certificate (PEM `FILE`, with --audit-syslog-key) the node presents to a collector that asks for one, read again at every reconnect (empty: none; the node's cluster certificate is not sent unless named here: a collector made to trust the cluster CA would accept every client certificate it issued as a log source)", EnvVars: envs("AUDIT_SYSLOG_CERT")},
				&ucli.StringFlag{Name: "audit-syslog-key", Usage: "the private key (PEM `FILE`) of --audit-syslog-cert", EnvVars: envs("AUDIT_SYSLOG_KEY")},
				&ucli.DurationFlag{Name: "log-scrub-interval", Value: d.LogScrubInterval, Usage: "read every partition's sealed segments, and the metadata log's entries and snapshots, and check their CRCs this often, finding silent disk corruption before a reader or a failover does (a corrupt batch stops the node; its next start, in this process with --log-scrub-restart, truncates that log there and fetches the rest again: a partition from its leader, the metadata log from the quorum, voting only once caught up; a single voter refuses to start instead); 0: never", EnvVars: envs("LOG_SCRUB_INTERVAL")},
				&ucli.BoolFlag{Name: "log-scrub-restart", Value: true, Usage: "after the scrub finds a corrupt batch and the node stops, start it again in this process (its start repairs the partition), at most 3 times an hour; false: exit, for a supervisor to restart it", EnvVars: envs("LOG_SCRUB_RESTART")},
				&ucli.Int64Flag{Name: "log-scrub-bytes-per-sec", Value: d.LogScrubBytesPerSec, Usage: "how fast the scrub reads (0: unlimited)", EnvVars: envs("LOG_SCRUB_BYTES_PER_SEC")},
				&ucli.DurationFlag{Name: "log-scrub-quarantine-retention", Value: d.LogScrubQuarantineRetention, Usage: "remove what a scrub repair set aside (a partition's scrub-quarantine-* directory) once it is this old and redundant: the replica holds its last offset again, committed and in the same leader epoch, in sync with another replica; never for a partition of replication factor 1 or one whose offsets cannot be read; 0: never remove automatically", EnvVars: envs("LOG_SCRUB_QUARANTINE_RETENTION")},
				&ucli.StringFlag{Name: "fsync", Value: "always", Usage: "durability: always | interval=200ms | never", EnvVars: envs("FSYNC")},
				&ucli.Int64Flag{Name: "segment-bytes", Value: d.SegmentBytes, Usage: "segment file size", EnvVars: envs("SEGMENT_BYTES")},
				&ucli.Int64Flag{Name: "page-cache-bytes", Value: d.PageCacheBytes, Usage: "how much of each partition's newest segment stays in the page cache after a flush; older durable bytes are dropped from it in whole 2 MiB stretches, so up to 2 MiB more stays (-1: leave the page cache to the OS)", EnvVars: envs("PAGE_CACHE_BYTES")},
				&ucli.DurationFlag{Name: "retention-check-interval", Value: d.RetentionCheckInterval, Usage: "how often each partition's retention.ms/retention.bytes is applied", EnvVars: envs("RETENTION_CHECK_INTERVAL")},
				&ucli.Int64Flag{Name: "retention-ms", Value: d.RetentionMs, Usage: "default retention.ms for topics that set none (-1: forever)", EnvVars: envs("RETENTION_MS")},
				&ucli.Int64Flag{Name: "retention-bytes", Value: d.RetentionBytes, Usage: "default retention.bytes per partition for topics that set none (-1: unlimited)", EnvVars: envs("RETENTION_BYTES")},
				&ucli.DurationFlag{Name: "log-cleaner-interval", Value: d.LogCleanerInterval, Usage: "how often the log cleaner compacts the partitions of topics with cleanup.policy=compact (0: never)", EnvVars: envs("LOG_CLEANER_INTERVAL")},
				&ucli.Int64Flag{Name: "log-cleaner-dedupe-buffer-size", Value: d.LogCleanerDedupeBufferSize, Usage: "bytes of memory a log cleaner pass's map of the keys it cleans may take, keys included; a partition written with more keys since its last pass is cleaned over several passes", EnvVars: envs("LOG_CLEANER_DEDUPE_BUFFER_SIZE")},
				&ucli.IntFlag{Name: "log-cleaner-threads", Value: d.LogCleanerThreads, Usage: "how many partitions the log cleaner compacts at once, the dirtiest first (Kafka's log.cleaner.threads); they share --log-cleaner-io-max-bytes-per-second, and each gets an equal share of --log-cleaner-dedupe-buffer-size (at least 1 MiB)", EnvVars: envs("LOG_CLEANER_THREADS")},
				&ucli.Int64Flag{Name: "log-cleaner-io-max-bytes-per-second", Usage: "bytes per second the log cleaner may read and write, over all the partitions it compacts, so that compaction leaves the disk to produce and fetch (0: unlimited)", EnvVars: envs("LOG_CLEANER_IO_MAX_BYTES_PER_SECOND")},
				&ucli.DurationFlag{Name: "producer-id-expiration", Value: d.ProducerIDExpiration, Usage: "forget an idempotent producer id idle this long (checked every --retention-check-interval)", EnvVars: envs("PRODUCER_ID_EXPIRATION")},
				&ucli.IntFlag{Name: "disk-resume-free-percent", Value: d.DiskResumeFreePercent, Usage: "a node whose disk filled resumes only once this percentage of the data directory's file system is free (0: as soon as 1 MiB fits)", EnvVars: envs("DISK_RESUME_FREE_PERCENT")},
				&ucli.DurationFlag{Name: "disk-stall-timeout", Value: d.DiskStallTimeout, Usage: "a node with a disk operation (fsync, msync, write) in flight this long holds back its heartbeats, so that the controller fences it and moves its leaderships, until the operation returns (0: off)", EnvVars: envs("DISK_STALL_TIMEOUT")},
				&ucli.DurationFlag{Name: "heartbeat-interval", Value: d.HeartbeatInterval, Usage: "broker heartbeat interval", EnvVars: envs("HEARTBEAT_INTERVAL")},
				&ucli.DurationFlag{Name: "session-timeout", Value: d.SessionTimeout, Usage: "fence a broker silent this long", EnvVars: envs("SESSION_TIMEOUT")},
				&ucli.DurationFlag{Name: "port-probe-after", Value: d.PortProbeAfter, Usage: "as the active controller, probe the UDP port of a broker silent this long (at least 1.5 heartbeat intervals) and fence it at once if its host refuses the probe, or refused this node's own datagrams to it since its last heartbeat (its process is gone), not when its session runs out; as a metadata follower, probe a raft leader silent for 1.5 of its heartbeat intervals (2 raft ticks; this long if that is shorter, in raft ticks, rounded up) and skip the rest of its lease if refused (0: off)", EnvVars: envs("PORT_PROBE_AFTER")},
				&ucli.DurationFlag{Name: "replica-lag-time", Value: d.ReplicaLagTime, Usage: "shrink a follower out of the ISR once it lacks records the leader had this long ago", EnvVars: envs("REPLICA_LAG_TIME")},
				&ucli.DurationFlag{Name: "preferred-leader-delay", Value: d.PreferredLeaderDelay, Usage: "as the active controller, move a partition's leadership back to its preferred replica only once that replica has been back in the ISR this long, has applied the metadata saying so, and keeps up with the metadata log (0: as soon as it has applied it)", EnvVars: envs("PREFERRED_LEADER_DELAY")},
				&ucli.Int64Flag{Name: "reassignment-throttle", Usage: "bytes per second this node may copy for replicas a reassignment adds to it, until each is in sync (0: unlimited)", EnvVars: envs("REASSIGNMENT_THROTTLE")},
				&ucli.DurationFlag{Name: "raft-tick", Value: d.RaftTick, Usage: "raft tick interval", EnvVars: envs("RAFT_TICK")},
				&ucli.IntFlag{Name: "election-ticks", Value: d.ElectionTicks, Usage: "raft election timeout in ticks", EnvVars: envs("ELECTION_TICKS")},
				&ucli.StringFlag{Name: "log-level", Value: "info", Usage: "debug | info | warn | error", EnvVars: envs("LOG_LEVEL")},
				&ucli.BoolFlag{Name: "log-json", Usage: "log as JSON lines", EnvVars: envs("LOG_JSON")},
			},
			Action: func(c *ucli.Context) error {
				opts, err := parseNodeOptions(c)
				if err != nil {
					return ucli.Exit(err.Error(), 2)
				}
				return runNode(c.Context, opts, c.App.Writer, c.App.ErrWriter)
			},
		}},
	}
}

// nodeRequired are node start's required flags. They are checked here, not
// with urfave/cli's Required, which prints the whole help text to stdout.
var nodeRequired = []string{"id", "addr", "data-dir", "controllers"}

func parseNodeOptions(c *ucli.Context) (nodeOptions, error) {
	if c.NArg() > 0 {
		return nodeOptions{}, fmt.Errorf("node start takes no arguments, got: %s", strings.Join(c.Args().Slice(), " "))
	}
	var missing []string
	for _, name := range nodeRequired {
		if !c.IsSet(name) {
			missing = append(missing, "--"+name)
		}
	}
	if len(missing) > 0 {
		return nodeOptions{}, fmt.Errorf("node start: missing %s (or their PAYMENTLOG_* environment variables)", strings.Join(missing, ", "))
	}
	cfg := node.DefaultConfig()
	if id := c.Int("id"); id <= 0 || id > math.MaxInt32 {
		return nodeOptions{}, fmt.Errorf("--id %d: must be 1-%d", id, math.MaxInt32)
	}
	cfg.ID = int32(c.Int("id"))
	cfg.Addr = c.String("addr")
	cfg.Rack = c.String("rack")
	cfg.DataDir = c.String("data-dir")
	ctrls, err := ParseControllers(c.String("controllers"))
	if err != nil {
		return nodeOptions{}, err
	}
	cfg.Controllers = ctrls
	cfg.MetricsAddr = c.String("metrics-addr")
	cfg.TLSDir = c.String("tls-dir")
	cfg.CertName = c.String("cert-name")
	switch iv := c.Duration("tls-reload-interval"); {
	case iv < 0:
		return nodeOptions{}, fmt.Errorf("--tls-reload-interval: must be 0 (only on SIGHUP) or more")
	case iv == 0:
		cfg.TLSReloadInterval = -1
	default:
		cfg.TLSReloadInterval = iv
	}
	if cfg.CertName == "" {
		cfg.CertName = fmt.Sprintf("node%d", cfg.ID)
	}
	cfg.Authorizer = c.String("authorizer")
	supers, err := parseSuperUsers(c.String("super-users"))
	if err != nil {
		return nodeOptions{}, err
	}
	cfg.SuperUsers = supers
	cfg.AuditLog = c.String("audit-log")
	cfg.AuditAccessInterval = c.Duration("audit-access-interval")
	cfg.AuditSyslog = c.String("audit-syslog")
	cfg.AuditSyslogTLS = audit.ForwardTLS{CAFile: c.String("audit-syslog-ca"), ServerName: c.String("audit-syslog-server-name"),
		CertFile: c.String("audit-syslog-cert"), KeyFile: c.String("audit-syslog-key")}
	cfg.AuditLogMaxBytes = c.Int64("audit-log-max-bytes")
	cfg.AuditLogMaxFiles = c.Int("audit-log-max-files")
	cfg.LogScrubInterval = c.Duration("log-scrub-interval")
	cfg.LogScrubBytesPerSec = c.Int64("log-scrub-bytes-per-sec")
	cfg.LogScrubQuarantineRetention = c.Duration("log-scrub-quarantine-retention")
	cfg.Version = Version
	pol, iv, err := segment.ParseSyncPolicy(c.String("fsync"))
	if err != nil {
		return nodeOptions{}, fmt.Errorf("--fsync: %w", err)
	}
	cfg.Sync, cfg.SyncInterval = pol, iv
	cfg.SegmentBytes = c.Int64("segment-bytes")
	cfg.PageCacheBytes = c.Int64("page-cache-bytes")
	cfg.RetentionCheckInterval = c.Duration("retention-check-interval")
	if cfg.RetentionCheckInterval <= 0 {
		return nodeOptions{}, fmt.Errorf("--retention-check-interval: must be > 0")
	}
	cfg.RetentionMs = c.Int64("retention-ms")
	cfg.RetentionBytes = c.Int64("retention-bytes")
	switch iv := c.Duration("log-cleaner-interval"); {
	case iv < 0:
		return nodeOptions{}, fmt.Errorf("--log-cleaner-interval: must be 0 (no cleaner) or more")
	case iv == 0:
		cfg.LogCleanerInterval = -1
	default:
		cfg.LogCleanerInterval = iv
	}
	if cfg.LogCleanerDedupeBufferSize = c.Int64("log-cleaner-dedupe-buffer-size"); cfg.LogCleanerDedupeBufferSize < 1<<20 {
		return nodeOptions{}, fmt.Errorf("--log-cleaner-dedupe-buffer-size: must be at least 1048576 (1 MiB)")
	}
	if cfg.LogCleanerThreads = c.Int("log-cleaner-threads"); cfg.LogCleanerThreads < 1 {
		return nodeOptions{}, fmt.Errorf("--log-cleaner-threads: must be at least 1")
	}
	if cfg.LogCleanerIOMaxBytesPerSec = c.Int64("log-cleaner-io-max-bytes-per-second"); cfg.LogCleanerIOMaxBytesPerSec < 0 {
		return nodeOptions{}, fmt.Errorf("--log-cleaner-io-max-bytes-per-second: must be 0 (unlimited) or more")
	}
	cfg.ProducerIDExpiration = c.Duration("producer-id-expiration")
	if cfg.ProducerIDExpiration <= 0 {
		return nodeOptions{}, fmt.Errorf("--producer-id-expiration: must be > 0")
	}
	cfg.DiskResumeFreePercent = c.Int("disk-resume-free-percent")
	if cfg.DiskStallTimeout = c.Duration("disk-stall-timeout"); cfg.DiskStallTimeout < 0 {
		return nodeOptions{}, fmt.Errorf("--disk-stall-timeout: must be >= 0 (0: off)")
	}
	cfg.HeartbeatInterval = c.Duration("heartbeat-interval")
	cfg.SessionTimeout = c.Duration("session-timeout")
	cfg.PortProbeAfter = c.Duration("port-probe-after")
	cfg.ReplicaLagTime = c.Duration("replica-lag-time")
	cfg.PreferredLeaderDelay = c.Duration("preferred-leader-delay")
	if cfg.ReassignmentThrottle = c.Int64("reassignment-throttle"); cfg.ReassignmentThrottle < 0 {
		return nodeOptions{}, fmt.Errorf("--reassignment-throttle: must be 0 (unlimited) or more bytes per second")
	}
	cfg.RaftTick = c.Duration("raft-tick")
	cfg.ElectionTicks = c.Int("election-ticks")
	if err := cfg.Validate(); err != nil {
		return nodeOptions{}, err
	}
	return nodeOptions{cfg: cfg, logLevel: c.String("log-level"), logJSON: c.Bool("log-json"), scrubRestart: c.Bool("log-scrub-restart")}, nil
}

// parseSuperUsers parses --super-users: principals separated by commas,
// each User:NAME or NAME (made User:NAME).
func parseSuperUsers(s string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if !strings.Contains(p, ":") {
			p = wire.PrincipalPrefix + p
		}
		if why := wire.CheckPrincipal(p); why != "" {
			return nil, fmt.Errorf("--super-users: %s", why)
		}
		if p == wire.WildcardPrincipal {
			return nil, fmt.Errorf("--super-users: %s names no one (to let every client do everything, run without --authorizer acl)", p)
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// ParseControllers parses "1@127.0.0.1:7101,2@127.0.0.1:7102".
func ParseControllers(s string) (map[int32]string, error) {
	out := map[int32]string{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		id, addr, ok := strings.Cut(part, "@")
		if !ok {
			return nil, fmt.Errorf("--controllers: %q is not id@host:port", part)
		}
		n, err := strconv.ParseInt(id, 10, 32)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("--controllers: bad node id %q (1-%d)", id, math.MaxInt32)
		}
		if _, dup := out[int32(n)]; dup {
			return nil, fmt.Errorf("--controllers: node id %d listed twice", n)
		}
		out[int32(n)] = addr
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--controllers: empty")
	}
	return out, nil
}

func newLogger(w io.Writer, level string, json bool, nodeID int32) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	ho := &slog.HandlerOptions{Level: lv}
	var h slog.Handler
	if json {
		h = slog.NewJSONHandler(w, ho)
	} else {
		h = slog.NewTextHandler(w, ho)
	}
	return slog.New(h).With("node", nodeID), nil
}

// runningNode is what runNode needs of a started node.
type runningNode interface {
	Done() <-chan struct{}
	Shutdown(ctx context.Context) error
	Err() error
}

// startNode starts a node; tests replace it.
var startNode = func(ctx context.Context, cfg node.Config) (runningNode, error) {
	n, err := node.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return n, nil
}

// reloadTLS reloads a node's TLS files on SIGHUP and logs the outcome (a
// refusal is logged by the endpoint too, at warn, once per set of files).
func reloadTLS(n runningNode, log *slog.Logger) {
	r, ok := n.(interface{ ReloadTLS() (bool, error) })
	if !ok {
		return
	}
	switch changed, err := r.ReloadTLS(); {
	case err != nil:
		log.Error("SIGHUP: TLS files not reloaded", "err", err)
	case changed:
		log.Info("SIGHUP: TLS files reloaded")
	default:
		log.Info("SIGHUP: TLS files unchanged since the node last loaded them")
	}
}
