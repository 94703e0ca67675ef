package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"paymentlog/node/audit"
	"paymentlog/node/broker"
	"paymentlog/node/controller"
	"paymentlog/node/metadata"
	"paymentlog/segment"
	"paymentlog/wire"
)

// Config configures one paymentlog process. DefaultConfig gives every field's
// default; Validate names the first bad field.
type Config struct {
	ID          int32            // node id, > 0
	Addr        string           // UDP listen address
	Rack        string           // failure domain (--rack: a rack, a zone); "" none (metadata/racks.go)
	DataDir     string           // holds __cluster_metadata-0 and <topic>-<partition> directories
	Controllers map[int32]string // controller-eligible nodes: id -> addr
	MetricsAddr string           // HTTP /metrics and /debug/pprof; empty = off
	TLSDir      string           // mutual TLS material; empty = dev mode
	CertName    string           // certificate name inside TLSDir
	// TLSReloadInterval is how often the node reads its TLS files again to
	// pick up a rotated certificate or ca.crt (quic.DefaultTLSReloadInterval;
	// negative: only on ReloadTLS, which SIGHUP calls in `node start`).
	TLSReloadInterval time.Duration
	// Authorizer is "acl" to enforce the cluster's ACL bindings on every
	// client request (authorize.go; needs TLSDir), "" or "none" to let
	// every client certificate do everything.
	Authorizer string
	// SuperUsers are principals ("User:NAME") allowed everything under
	// Authorizer "acl" (Kafka's super.users); node certificates always are.
	SuperUsers []string

	Sync         segment.SyncPolicy // default SyncAlways
	SyncInterval time.Duration      // with SyncInterval; default 200ms
	SegmentBytes int64              // default 256 MiB
	// PageCacheBytes is how much of each partition's newest segment stays
	// in the page cache after a flush (segment.Options.CacheBytes); older
	// durable bytes are dropped from it; default 16 MiB, at least 1 MiB;
	// -1: never drop.
	PageCacheBytes int64

	// RetentionCheckInterval paces the retention passes (Kafka's
	// log.retention.check.interval.ms); default 5m.
	RetentionCheckInterval time.Duration
	// RetentionMs and RetentionBytes are the defaults for topics that set no
	// retention.ms or retention.bytes; -1 (the default): forever, unlimited.
	// 0 is taken as -1 (a topic may ask for 0 itself).
	RetentionMs, RetentionBytes int64
	// ProducerIDExpiration is how long a partition remembers an idle
	// idempotent producer (Kafka's producer.id.expiration.ms); default 24h.
	ProducerIDExpiration time.Duration
	// LogScrubInterval paces the scrubber, which reads every sealed
	// segment and checks its batches' CRCs (node/broker's scrub.go): a
	// pass starts this long after the previous one started; 0: never.
	// LogScrubBytesPerSec bounds how fast it reads (0: unlimited), and
	// LogScrubDelay is the wait before the first pass after a start (at
	// most LogScrubInterval).
	LogScrubInterval    time.Duration
	LogScrubBytesPerSec int64
	LogScrubDelay       time.Duration
	// LogScrubQuarantineRetention is how long what a scrub repair set
	// aside (segment's quarantine.go) is kept before the broker removes
	// it, once the replica holds those offsets again in sync with another
	// (node/broker's quarantine_sweep.go); default 168h; 0: never
	// automatically.
	LogScrubQuarantineRetention time.Duration
	// LogCleanerInterval paces the log cleaner's passes over the
	// partitions of compacted topics (cleanup.policy=compact; Kafka's
	// log.cleaner.backoff.ms); default 15s; negative: no cleaner.
	LogCleanerInterval time.Duration
	// LogCleanerIOMaxBytesPerSec limits the bytes the log cleaner reads
	// and writes per second (Kafka's log.cleaner.io.max.bytes.per.second);
	// 0: unlimited, the default.
	LogCleanerIOMaxBytesPerSec int64
	// LogCleanerDedupeBufferSize bounds the memory of a cleaner pass's
	// key map, keys included (Kafka's log.cleaner.dedupe.buffer.size);
	// default segment.DefaultCompactMaxMapBytes, 128 MiB.
	LogCleanerDedupeBufferSize int64
	// LogCleanerThreads is how many partitions the log cleaner compacts
	// at once (Kafka's log.cleaner.threads), the dirtiest first; they
	// share LogCleanerIOMaxBytesPerSec, and each gets an equal share of
	// LogCleanerDedupeBufferSize (at least 1 MiB); default 1 (0: 1).
	LogCleanerThreads int

	// DiskResumeFreePercent: a node whose disk filled resumes (heartbeats
	// again, so that the controller unfences it) only once its data
	// directory's file system has at least this share of its size free
	// (diskresume.go); default 10, 0..90; 0: as soon as the 1 MiB probe fits.
	DiskResumeFreePercent int
	// DiskStallTimeout: while a disk operation of the partition logs or
	// the metadata log (an fsync, msync, write, ...) has been in flight
	// longer than this, the node holds back its heartbeats so that the
	// controller fences it and moves its leaderships (diskstall.go);
	// default DefaultDiskStallTimeout (2s), 0: off.
	DiskStallTimeout time.Duration

	HeartbeatInterval time.Duration // default 50ms
	SessionTimeout    time.Duration // default 250ms
	// PortProbeAfter: as the active controller, probe the port of a broker
	// whose heartbeats have been silent this long (at least 1.5 heartbeat
	// intervals), and fence it at once if its host refuses the probe, or
	// refused this node's own datagrams to it since its last heartbeat (no
	// socket behind the port: its process is gone) instead of when its
	// session runs out (node/controller/probe.go); default
	// DefaultPortProbeAfter, 0: off.
	PortProbeAfter time.Duration
	ReplicaLagTime time.Duration // default 2s
	// PreferredLeaderDelay: while this node is the active controller, a
	// partition's leadership moves back to its preferred replica only once
	// that replica has been back in the ISR this long (and has applied the
	// metadata saying so: node/controller/preferred.go); default
	// controller.DefaultPreferredLeaderDelay (2s), 0: no delay.
	PreferredLeaderDelay time.Duration
	// GroupSessionTimeout and GroupHeartbeatInterval are the consumer
	// group members' while this node is the active controller (0: the
	// membership package's defaults, 10s and 1s).
	GroupSessionTimeout, GroupHeartbeatInterval time.Duration
	// ReassignmentThrottle: bytes per second this node may copy for
	// replicas a reassignment adds to it, until each is in sync (0:
	// unlimited, the default).
	ReassignmentThrottle int64
	// ReplicaFetchMaxBytes bounds one replica fetch answer (0: the
	// broker's default, 8 MiB); tests lower it.
	ReplicaFetchMaxBytes int32
	RaftTick             time.Duration // default 25ms
	ElectionTicks        int           // default 10 (raft randomizes to 10–20 ticks)

	// NoRaftSync skips fsync of the metadata log (tests only).
	NoRaftSync bool
	// MetadataSnapshotEvery and MetadataCatchUpEntries override raftnode's
	// snapshot spacing and the entries kept behind a snapshot (0: its
	// defaults); tests use them to make a restarted node catch up from a
	// snapshot.
	MetadataSnapshotEvery, MetadataCatchUpEntries uint64
	// FirstStartWithMajority lets a controller whose metadata log is empty
	// treat answers from a majority of the controllers (itself included),
	// all with nothing past the bootstrap entries, as a cluster's first
	// start; by default every other controller must answer (node/rejoin.go).
	// For creating a cluster while a controller is missing. Unsafe on a
	// controller that lost its log: if the controllers holding the metadata
	// are down and the ones up never received any, it votes with them and
	// the metadata is lost. No command-line flag; default off.
	FirstStartWithMajority bool
	// LogFS holds the partition logs and the HW checkpoint (tests inject
	// faults through a segment.MemFS); default the OS file system.
	LogFS segment.FS
	// MetadataFS holds the metadata log (raft entries, hard state,
	// snapshots); tests inject faults through a segment.MemFS. Default the
	// OS file system.
	MetadataFS segment.FS

	Logger *slog.Logger
	// AuditLog is the file the audit trail is appended to (node/audit:
	// one JSON line per request that changes the cluster or is refused by
	// ACL); "" writes it to Logger.
	AuditLog string
	// AuditAccessInterval is how often the audit trail records again that
	// a client goes on reading or writing a topic (node/audit's access
	// lines: the first read or write per principal, address and topic,
	// then one per interval); 0 records no access lines.
	AuditAccessInterval time.Duration
	// AuditLogMaxBytes is the size past which AuditLog is rotated to
	// AuditLog.<time> and a new file started that continues the hash chain
	// (node/audit's rotate.go; default audit.DefaultMaxBytes, 100 MiB; 0:
	// never). AuditLogMaxFiles is how many rotated files are kept, the
	// oldest deleted first (default 0: all; deleting is the operator's
	// retention choice).
	AuditLogMaxBytes int64
	AuditLogMaxFiles int
	// AuditSyslog, when set, also sends every audit line to this syslog
	// collector: tcp://HOST:PORT, tls://HOST:PORT or udp://HOST:PORT
	// (node/audit's forward.go).
	AuditSyslog string
	// AuditSyslogTLS is how a tls:// AuditSyslog is verified and whether
	// the node presents a client certificate (zero: the system roots, the
	// address's host, none; node/audit's forward_tls.go).
	AuditSyslogTLS audit.ForwardTLS
	// Version is the build's version, for the audit trail's start line.
	Version string
	// InProcessRestarts is how many times this process started the node
	// before this start (`node start` starts it again after its scrub
	// found corruption: cli/node_restart.go). A supervisor that counts
	// process restarts sees none of those; /metrics reports them as
	// paymentlog_node_in_process_restarts_total.
	InProcessRestarts int

	// rejoinGate, if set, is called before each round of a vote-guarded
	// controller's questions (rejoin.go); tests hold a round back with it
	// (SetRejoinGate in export_test.go).
	rejoinGate func(context.Context)
	// heartbeatHold, if set, holds this broker's heartbeats back while it
	// returns true, as a full disk does (a test stands in for a stalled
	// broker with it: SetHeartbeatHold in export_test.go).
	heartbeatHold func() bool
	// applyGate, if set, is called before each committed metadata entry
	// is applied, with its index (a test holds a replay at one point of
	// the metadata log: SetApplyGate in export_test.go).
	applyGate func(index uint64)
	// probesUnanswered, if set, makes this node's port probes go
	// unanswered, as between hosts once the dead host's ICMP budget for
	// this peer is spent (port_probe.go): only the node's own QUIC traffic
	// can find a port closed (SetProbesUnanswered in export_test.go).
	probesUnanswered bool
	// raftDropIncoming is raftnode.Config.DropIncoming (tests only:
	// SetRaftDeaf).
	raftDropIncoming func(from uint64) bool
}

// Defaults.
const (
	DefaultSegmentBytes           = 256 << 20
	DefaultHeartbeatInterval      = 50 * time.Millisecond
	DefaultRetentionCheckInterval = 5 * time.Minute
	DefaultProducerIDExpiration   = 24 * time.Hour
	DefaultLogCleanerInterval     = 15 * time.Second
	// DefaultLogScrubBytesPerSec: a terabyte a day and a half.
	DefaultLogScrubBytesPerSec   = 8 << 20
	DefaultSessionTimeout        = 250 * time.Millisecond
	DefaultPortProbeAfter        = 75 * time.Millisecond
	DefaultReplicaLagTime        = 2 * time.Second
	DefaultRaftTick              = 25 * time.Millisecond
	DefaultElectionTicks         = 10
	DefaultDiskResumeFreePercent = 10
)

// Why these timings: a dead broker is noticed only by silence (a SIGKILLed
// process or a dead machine sends nothing), so the session timeout is the
// floor of leader failover; DESIGN promises writes resume "well under a
// second". 250 ms is five heartbeats: a healthy broker must miss five in a
// row to be fenced, which a loaded 2-core machine does not do (measured with
// paymentlog bench: zero fencings in the throughput runs). Raft elections
// take 10–20 ticks of 25 ms (250–500 ms) after the active controller dies;
// its own broker then gets three heartbeats of grace (see
// controller.Config.PrevControllerGrace), everyone else one session. A
// follower is shrunk out of the ISR after ReplicaLagTime (2 s, eight session
// timeouts), so a dead follower is always fenced — and removed from every ISR
// by the controller — long before the lag rule fires, and the lag rule is
// left for live-but-slow replicas.

// DefaultConfig returns a Config with every default filled in.
func DefaultConfig() Config {
	return Config{
		Sync:                        segment.SyncAlways,
		SyncInterval:                200 * time.Millisecond,
		SegmentBytes:                DefaultSegmentBytes,
		PageCacheBytes:              segment.DefaultCacheBytes,
		RetentionCheckInterval:      DefaultRetentionCheckInterval,
		RetentionMs:                 -1,
		RetentionBytes:              -1,
		ProducerIDExpiration:        DefaultProducerIDExpiration,
		LogCleanerInterval:          DefaultLogCleanerInterval,
		LogScrubInterval:            broker.DefaultScrubInterval,
		LogScrubQuarantineRetention: broker.DefaultQuarantineRetention,
		LogScrubBytesPerSec:         DefaultLogScrubBytesPerSec,
		LogScrubDelay:               broker.DefaultScrubDelay,
		LogCleanerDedupeBufferSize:  segment.DefaultCompactMaxMapBytes,
		LogCleanerThreads:           broker.DefaultCleanerThreads,
		HeartbeatInterval:           DefaultHeartbeatInterval,
		SessionTimeout:              DefaultSessionTimeout,
		PortProbeAfter:              DefaultPortProbeAfter,
		ReplicaLagTime:              DefaultReplicaLagTime,
		PreferredLeaderDelay:        controller.DefaultPreferredLeaderDelay,
		RaftTick:                    DefaultRaftTick,
		ElectionTicks:               DefaultElectionTicks,
		DiskResumeFreePercent:       DefaultDiskResumeFreePercent,
		DiskStallTimeout:            DefaultDiskStallTimeout,
		AuditAccessInterval:         audit.DefaultAccessInterval,
		AuditLogMaxBytes:            audit.DefaultMaxBytes,
	}
}

// ConfigError names the offending field.
type ConfigError struct {
	Field string
	Err   error
}

func (e *ConfigError) Error() string { return fmt.Sprintf("node config: %s: %v", e.Field, e.Err) }
func (e *ConfigError) Unwrap() error { return e.Err }

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.ID <= 0:
		return &ConfigError{"id", errors.New("must be > 0")}
	case c.Addr == "":
		return &ConfigError{"addr", errors.New("required")}
	case c.DataDir == "":
		return &ConfigError{"data-dir", errors.New("required")}
	case len(c.Controllers) == 0:
		return &ConfigError{"controllers", errors.New("required")}
	case c.HeartbeatInterval <= 0:
		return &ConfigError{"heartbeat-interval", errors.New("must be > 0")}
	case c.SessionTimeout < 2*c.HeartbeatInterval:
		return &ConfigError{"session-timeout", errors.New("must be at least twice the heartbeat interval")}
	case c.DiskStallTimeout < 0:
		return &ConfigError{"disk-stall-timeout", errors.New("must be >= 0 (0: off)")}
	case c.PortProbeAfter < 0:
		return &ConfigError{"port-probe-after", errors.New("must be >= 0 (0: off)")}
	case c.DiskStallTimeout > 0 && c.DiskStallTimeout < 2*c.HeartbeatInterval:
		// The detector looks once a heartbeat, and the device watch dates a
		// write to the look before the one that saw it: with looks a
		// timeout apart every slow operation would be a stall.
		return &ConfigError{"disk-stall-timeout", errors.New("must be at least twice the heartbeat interval (or 0: off)")}
	case c.PreferredLeaderDelay < 0:
		return &ConfigError{"preferred-leader-delay", errors.New("must be >= 0 (0: no delay)")}
	case c.RaftTick <= 0:
		return &ConfigError{"raft-tick", errors.New("must be > 0")}
	case c.ElectionTicks < 2:
		return &ConfigError{"election-ticks", errors.New("must be >= 2")}
	case c.SegmentBytes < 1<<20:
		return &ConfigError{"segment-bytes", errors.New("must be >= 1 MiB")}
	case c.PageCacheBytes != -1 && c.PageCacheBytes < 1<<20:
		return &ConfigError{"page-cache-bytes", errors.New("must be -1 (never drop) or >= 1 MiB")}
	case c.RetentionCheckInterval < 0:
		return &ConfigError{"retention-check-interval", errors.New("must be > 0")}
	case c.ProducerIDExpiration < 0:
		return &ConfigError{"producer-id-expiration", errors.New("must be > 0")}
	case c.RetentionMs < -1:
		return &ConfigError{"retention-ms", errors.New("must be >= -1")}
	case c.RetentionBytes < -1:
		return &ConfigError{"retention-bytes", errors.New("must be >= -1")}
	case c.LogScrubInterval < 0 || c.LogScrubBytesPerSec < 0 || c.LogScrubDelay < 0:
		return &ConfigError{"log-scrub-interval", errors.New("the scrub interval, rate and delay must be >= 0")}
	case c.LogScrubQuarantineRetention < 0:
		return &ConfigError{"log-scrub-quarantine-retention", errors.New("must be >= 0 (0: never remove automatically)")}
	case c.AuditAccessInterval < 0:
		return &ConfigError{"audit-access-interval", errors.New("must be >= 0 (0: no access lines)")}
	case c.AuditLogMaxBytes < 0:
		return &ConfigError{"audit-log-max-bytes", errors.New("must be >= 0 (0: never rotate)")}
	case c.AuditLogMaxFiles < 0:
		return &ConfigError{"audit-log-max-files", errors.New("must be >= 0 (0: keep every rotated file)")}
	case c.LogCleanerThreads < 0:
		return &ConfigError{"log-cleaner-threads", errors.New("must be at least 1")}
	case c.LogCleanerThreads > broker.MaxCleanerThreads(c.LogCleanerDedupeBufferSize):
		return &ConfigError{"log-cleaner-threads", fmt.Errorf("each thread's share of the log cleaner's dedupe buffer (%d bytes) must be at least 1 MiB",
			cmp.Or(c.LogCleanerDedupeBufferSize, segment.DefaultCompactMaxMapBytes))}
	case c.DiskResumeFreePercent < 0 || c.DiskResumeFreePercent > 90:
		return &ConfigError{"disk-resume-free-percent", errors.New("must be 0..90")}
	}
	if c.AuditSyslog != "" || !c.AuditSyslogTLS.IsZero() {
		if err := auditSyslogInvalid(c.AuditSyslog, c.AuditSyslogTLS); err != nil {
			return &ConfigError{"audit-syslog", err}
		}
	}
	if why := metadata.CheckRack(c.Rack); why != "" {
		return &ConfigError{"rack", errors.New(why)}
	}
	switch c.Authorizer {
	case "", AuthorizerNone:
	case AuthorizerACL:
		if c.TLSDir == "" {
			return &ConfigError{"authorizer", errors.New("acl needs --tls-dir: without mutual TLS no client has a name to authorize")}
		}
	default:
		return &ConfigError{"authorizer", fmt.Errorf("%q: want %s or %s", c.Authorizer, AuthorizerACL, AuthorizerNone)}
	}
	for _, p := range c.SuperUsers {
		if why := wire.CheckPrincipal(p); why != "" {
			return &ConfigError{"super-users", errors.New(why)}
		}
	}
	if a, ok := c.Controllers[c.ID]; ok && a != c.Addr {
		return &ConfigError{"controllers", fmt.Errorf("lists node %d at %s but --addr is %s", c.ID, a, c.Addr)}
	}
	return nil
}

// ControllerEligible reports whether this node is a raft voter.
func (c Config) ControllerEligible() bool { _, ok := c.Controllers[c.ID]; return ok }
