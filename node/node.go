// Package node is one paymentlog process: a broker (produce, fetch,
// replication, ISR — package node/broker) and, when listed in --controllers,
// a member of the metadata raft group whose leader is the active controller
// (packages raftnode, node/metadata, node/controller).
//
// Lifecycle: Start opens the endpoint, the metadata log and the broker, then
// registers with the active controller and heartbeats; the node reacts to
// every committed metadata change by telling the broker which partitions it
// leads or follows. Shutdown performs a controlled shutdown: it asks the
// controller to move its leaderships away (bounded by ctx), hands raft
// leadership to another controller if it holds it, then closes the broker,
// the raft node and the endpoint, in that order. After Shutdown, Done is
// closed and Err returns the first fatal error, if any.
package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"paymentlog/node/audit"
	"paymentlog/node/broker"
	"paymentlog/node/controller"
	"paymentlog/node/metadata"
	"paymentlog/quic"
	"paymentlog/raftnode"
	"paymentlog/segment"
	"paymentlog/wire"
)

// MetadataDirName is the metadata log's directory under the data dir.
const MetadataDirName = "__cluster_metadata-0"

// The metadata store refuses a raft snapshot it cannot decode before raft
// persists it (raftnode.SnapshotChecker).
var _ raftnode.SnapshotChecker = (*metadata.Store)(nil)

// Node is a running paymentlog process.
type Node struct {
	cfg Config
	// denied counts the client requests refused by ACL, by resource type
	// (deniedResources; authorize.go).
	denied [3]atomic.Uint64
	// tlsRefused counts the handshakes refused because of the peer's
	// certificate, by side and reason (audit_node.go, tls_refusals.go).
	tlsRefused tlsRefusals
	// audit is the audit trail (audit_requests.go, authorize.go).
	audit       *audit.Log
	log         *slog.Logger
	incarnation int64
	startedAt   time.Time // for paymentlog_node_start_time_seconds
	lock        *dirLock  // the data directory's, held until closeAll

	ep    *quic.Endpoint
	store *metadata.Store
	raft  *raftnode.Node
	// startCommit is the metadata log's commit index on disk at start: the
	// first registration waits (briefly) until it is applied, so the image
	// names the partitions assigned to this node (emptyReplicas).
	startCommit uint64
	ctrl        *controller.Controller // nil on broker-only nodes
	broker      *broker.Broker
	// metricsAddr is the /metrics listener's address ("" when off); set
	// before Start returns.
	metricsAddr string

	pids  producerIDs
	disk  diskFull  // see diskfull.go
	stall diskStall // see diskstall.go
	// handOff moves the controller's leadership off this node while it
	// is aside for its disk (diskstall_raft.go).
	handOff controllerHandOff
	// firstStartWitnesses is what this controller vouches for once its
	// rejoin guard lifted as a cluster's first start (rejoin.go): guarded
	// controllers' ids -> guard nonces. Set once, never modified.
	firstStartWitnesses atomic.Pointer[map[int32]string]

	// sweptCopies: removeUnassignedCopies has run (watcher goroutine only).
	sweptCopies bool

	cancel context.CancelFunc
	// runCtx is canceled when the node stops (cancel): handlers that
	// hold a request (the Metadata long poll) end their wait with it.
	runCtx context.Context
	wg     sync.WaitGroup
	done   chan struct{}

	mu struct {
		sync.Mutex
		err        error
		applied    map[partKey]broker.PartitionState // what the broker was last told
		registered bool
		// newStorage: the data directory was new at this start and no
		// registration saying so has been accepted yet (NewStorageFile).
		newStorage bool
		// empty and emptyAt: emptyReplicas's last answer and the image
		// offset it was computed at (a retried registration reuses it).
		empty   []wire.PartitionRef
		emptyAt uint64
		// torn: the partitions whose logs were found with a damaged tail
		// (emptyReplicas, with empty).
		torn []wire.PartitionRef
		// reconciled is the offset of the last image reconcile applied.
		reconciled uint64
		staleReg   bool      // the last registration was refused: our incarnation is older than the registered one
		lastHB     time.Time // last successful heartbeat
		hbSeq      uint64    // heartbeats started
		hbApplied  uint64    // the newest heartbeat whose answer was applied
		hbAcked    uint64    // the newest heartbeat whose answer arrived (sent as AckedSeq)
		fenced     bool
		closing    bool
		// ctrlContact: when an active controller last answered a
		// heartbeat (zero: never). Unlike lastHB it is not set at start.
		ctrlContact time.Time
	}
}

type partKey struct {
	topic     string
	partition int32
}

// Start brings the node up. The returned node runs until Shutdown.
func Start(ctx context.Context, cfg Config) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := checkOwnCertificate(cfg); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("node: data dir: %w", err)
	}
	lock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	newStorage, err := markNewStorage(cfg.DataDir)
	if err != nil {
		lock.unlock()
		return nil, err
	}
	inc, err := nextIncarnation(cfg.DataDir, time.Now())
	unrecorded := errors.Is(err, errIncarnationNotRecorded)
	if err != nil && !unrecorded {
		lock.unlock()
		return nil, err
	}
	stallOps, stallOnOS := trackDiskOps(&cfg) // before cfg's file systems are used
	n := &Node{
		lock:        lock,
		cfg:         cfg,
		log:         cfg.Logger,
		incarnation: inc,
		startedAt:   time.Now(),
		done:        make(chan struct{}),
	}
	n.stall.ops, n.stall.onOS = stallOps, stallOnOS
	n.stall.contCh = make(chan struct{}, 1)
	// Not err: it holds nextIncarnation's errIncarnationNotRecorded, used below.
	auditLog, aerr := audit.Open(cfg.AuditLog, cfg.ID, n.log.With("component", "audit"))
	if aerr != nil {
		lock.unlock()
		return nil, fmt.Errorf("node: %w", aerr)
	}
	auditLog.SetAccessInterval(cfg.AuditAccessInterval)
	auditLog.SetRotation(cfg.AuditLogMaxBytes, cfg.AuditLogMaxFiles)
	if cfg.AuditSyslog != "" {
		if ferr := auditLog.ForwardTo(cfg.AuditSyslog, cfg.AuditSyslogTLS); ferr != nil {
			auditLog.Close()
			lock.unlock()
			return nil, fmt.Errorf("node: %w", ferr)
		}
	}
	n.audit = auditLog
	n.disk.resume.freePercent = cfg.DiskResumeFreePercent
	if unrecorded {
		n.log.Error("disk full at start; the node starts and records its incarnation once there is room", "err", err)
		n.partitionDiskFull(cfg.DataDir, err)
		n.disk.incarnation = true
	} else if err := n.ensureDiskReserve(); err != nil {
		n.log.Warn("disk reserve not created at start; created once there is room", "err", err)
	}
	n.mu.applied = map[partKey]broker.PartitionState{}
	n.mu.newStorage = newStorage
	n.pids.allocate = n.allocateProducerIDs
	rctx, cancel := context.WithCancel(context.Background())
	n.cancel, n.runCtx = cancel, rctx
	ok := false
	defer func() {
		if !ok {
			cancel()
			n.closeAll()
		}
	}()

	seed, err := loadResetSeed(cfg.DataDir, n.log)
	if err != nil {
		n.log.Warn("QUIC reset seed unavailable: the stateless reset key is derived from the TLS key this start", "err", err)
	}
	ep, err := quic.New(ctx, quic.Config{
		ResetSeed:         seed,
		Addr:              cfg.Addr,
		TLS:               quic.TLSConfig{Dir: cfg.TLSDir, Name: cfg.CertName},
		TLSReloadInterval: cfg.TLSReloadInterval,
		Logger:            n.log,
		Authorize:         clusterAuthorizer(),
		OnTLSReload:       n.auditTLSReload, // audit_node.go
		OnRefusedPeer:     n.auditRefusedPeer,
	})
	if err != nil {
		return nil, fmt.Errorf("node: listen %s: %w", cfg.Addr, err)
	}
	n.ep = ep

	if cfg.ControllerEligible() && metadataLogFresh(cfg) {
		if err := checkControllerMembership(ctx, ep, cfg, membershipCheckTimeout); err != nil {
			return nil, err
		}
	}
	n.store = metadata.NewStore()
	var sm raftnode.StateMachine = n.store
	if cfg.applyGate != nil {
		sm = gatedStore{n.store, cfg.applyGate}
	}
	voters := map[uint64]string{}
	for id, a := range cfg.Controllers {
		voters[uint64(id)] = a
	}
	n.raft, err = raftnode.Start(ctx, raftnode.Config{
		ID:             uint64(cfg.ID),
		Voters:         voters,
		Addr:           cfg.Addr,
		DataDir:        filepath.Join(cfg.DataDir, MetadataDirName),
		Endpoint:       ep,
		TickInterval:   cfg.RaftTick,
		ElectionTicks:  cfg.ElectionTicks,
		NoSync:         cfg.NoRaftSync,
		SnapshotEvery:  cfg.MetadataSnapshotEvery,
		CatchUpEntries: cfg.MetadataCatchUpEntries,
		FS:             cfg.MetadataFS,
		SM:             sm,
		Logger:         n.log.With("component", "raft"),
		// A controller starting with an empty metadata log votes only once
		// it has caught up with the others (rejoin.go).
		RejoinGuard: true,
		// A follower probes a silent raft leader's port as the controller
		// probes a silent broker's (port_probe.go).
		LeaderProbe:      portProbe(cfg, ep),
		LeaderProbeTicks: leaderProbeTicks(cfg),
		DropIncoming:     cfg.raftDropIncoming,
	})
	if err != nil {
		return nil, fmt.Errorf("node: metadata log: %w", err)
	}
	n.startCommit = n.raft.Status().Commit
	if cfg.ControllerEligible() {
		n.ctrl = controller.New(controller.Config{
			NodeID:            cfg.ID,
			Raft:              n.raft,
			Store:             n.store,
			HeartbeatInterval: cfg.HeartbeatInterval,
			SessionTimeout:    cfg.SessionTimeout,
			// The controller's zero is its default; the node's is none.
			PreferredLeaderDelay: cmp.Or(cfg.PreferredLeaderDelay, -1),
			GroupSessionTimeout:  cfg.GroupSessionTimeout, GroupHeartbeatInterval: cfg.GroupHeartbeatInterval,
			Probe:      portProbe(cfg, ep),
			ProbeAfter: portProbeAfter(cfg),
			Logger:     n.log.With("component", "controller"),
		})
		// The raft leader whose port this node's raft found closed is the
		// controller this one would replace (port_probe.go).
		ctrl := n.ctrl
		n.raft.OnLeaderGone(func(id uint64) { ctrl.PortRefused(int32(id), time.Now()) })
	}
	n.broker, err = broker.New(ctx, broker.Config{
		NodeID:      cfg.ID,
		Incarnation: n.incarnation,
		DataDir:     cfg.DataDir,
		Endpoint:    ep,
		Authorize:   n.topicAuthorizer(),
		WrapHandler: n.audited,
		RackOf:      n.rackOf,
		Quotas:      n.newQuotaMeter(),
		CurrentTopicID: func(topic string, partition int32) (string, bool) {
			p, ok := n.store.Image().Partition(topic, partition)
			return p.TopicID, ok
		},
		Log: segment.Options{Sync: cfg.Sync, SyncInterval: cfg.SyncInterval, SegmentBytes: cfg.SegmentBytes, Logger: n.log,
			CacheBytes: cfg.PageCacheBytes,
			FS:         cfg.LogFS, OnFailure: n.storageFailed, OnDiskFull: n.partitionDiskFull,
			// Without fsync before acknowledging, a crash can leave a bad batch
			// anywhere after the last flush, sealed segments included: truncate
			// there (loudly) and let replication refetch from the leader. With
			// fsync always such a batch is damage on the disk: what the
			// truncation takes out is set aside (segment's quarantine.go) and
			// the log reported torn, so the node registers the partition as
			// such (it leaves the ELR) and refetches, as after a scrub.
			TruncateOnCorruption: cfg.Sync != segment.SyncAlways, RepairCorruption: cfg.Sync == segment.SyncAlways},
		ReplicaLagTime:          cfg.ReplicaLagTime,
		ReassignmentThrottle:    cfg.ReassignmentThrottle,
		ReplicaFetchMaxBytes:    cfg.ReplicaFetchMaxBytes,
		RetentionCheckInterval:  cfg.RetentionCheckInterval,
		RetentionMs:             cfg.RetentionMs,
		RetentionBytes:          cfg.RetentionBytes,
		ProducerIDExpiration:    cfg.ProducerIDExpiration,
		CleanerInterval:         cfg.LogCleanerInterval,
		ScrubInterval:           cfg.LogScrubInterval,
		ScrubBytesPerSec:        cfg.LogScrubBytesPerSec,
		ScrubDelay:              cfg.LogScrubDelay,
		QuarantineRetention:     cfg.LogScrubQuarantineRetention,
		CleanerIOMaxBytesPerSec: cfg.LogCleanerIOMaxBytesPerSec,
		CleanerDedupeBufferSize: cfg.LogCleanerDedupeBufferSize,
		CleanerThreads:          cfg.LogCleanerThreads,
		ReleaseDiskReserve:      n.releaseDiskReserve,
		AlterPartition:          n.alterPartition,
		Logger:                  n.log.With("component", "broker"),
	})
	if err != nil {
		return nil, fmt.Errorf("node: broker: %w", err)
	}
	if newStorage {
		n.broker.NewStorage() // no empty-replica marks: the registration covers all
	}
	n.disk.mu.Lock()
	n.broker.SetDiskFull(n.disk.full) // full at start (its incarnation not recorded)
	n.disk.mu.Unlock()
	n.registerHandlers()

	n.goRun(rctx, "serve", func(ctx context.Context) error {
		if err := ep.Serve(ctx); err != nil && !errors.Is(err, quic.ErrServerClosed) {
			return err
		}
		return nil
	})
	if n.ctrl != nil {
		n.goRun(rctx, "controller", n.ctrl.Run)
	}
	n.goRun(rctx, "metadata-watch", n.watchMetadata)
	n.goRun(rctx, "metadata-log", n.watchRaft)
	n.goRun(rctx, "heartbeat", n.heartbeatLoop)
	if n.stall.ops != nil {
		n.goRun(rctx, "sigcont-watch", n.watchContinue) // a stopped process is no stalled disk (diskstall_stop.go)
	}
	n.goRun(rctx, "disk-probe", n.probeDisk)
	if cfg.LogScrubInterval > 0 {
		n.goRun(rctx, "metadata-scrub", n.scrubMetadataLoop)
	}
	n.goRun(rctx, "metadata-quarantine-sweep", n.sweepMetadataQuarantinesLoop)
	if n.raft.Status().VoteGuarded {
		n.goRun(rctx, "rejoin-guard", n.awaitRejoinTarget)
	}
	if cfg.MetricsAddr != "" {
		if err := n.startMetrics(rctx); err != nil {
			return nil, err
		}
	}
	n.log.Info("node started", "addr", ep.Addr(), "controller_eligible", cfg.ControllerEligible(),
		"incarnation", n.incarnation, "data_dir", cfg.DataDir, "metrics_addr", n.metricsAddr, "authorizer", n.authorizerName())
	n.audit.Started(n.selfWho(), cfg.Version)
	ok = true
	return n, nil
}

// goRun runs fn in a goroutine tracked by the node; a fatal error is recorded
// and ends the node.
func (n *Node) goRun(ctx context.Context, name string, fn func(context.Context) error) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := fn(ctx); err != nil && ctx.Err() == nil {
			n.log.Error("fatal", "task", name, "err", err)
			n.fail(fmt.Errorf("node: %s: %w", name, err))
		}
	}()
}

func (n *Node) fail(err error) {
	n.mu.Lock()
	first := n.mu.err == nil
	if first {
		n.mu.err = err
	}
	n.mu.Unlock()
	if first {
		select {
		case <-n.done:
		default:
			close(n.done)
		}
	}
}

// watchRaft ends the node when the metadata raft node stops on its own (a
// failed write or fsync of the metadata log). Such a node applies no more
// metadata, yet its broker goes on heartbeating, so the controller keeps it
// unfenced and leading while it acts on a frozen image: it never learns of
// leader, ISR or topic changes and answers clients' metadata requests from
// it. Its raft status stays as it last was, so a former raft leader keeps
// naming itself as the controller to every broker and client. Stopping
// instead lets the controller fence it and move its partitions, as for a
// failed partition log (see storageFailed).
func (n *Node) watchRaft(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case <-n.raft.Done():
	}
	if err := n.raft.Err(); err != nil {
		return fmt.Errorf("metadata log failed: %w", err)
	}
	return errors.New("metadata log stopped")
}

// storageFailed stops the node when a partition log fails (an I/O error
// with unknown outcome, typically a failed fsync). Such a log takes no more
// writes and its page cache can no longer be trusted to match the disk
// (retrying an fsync that failed may "succeed" with the data gone), so the
// replicas on this node are of no use until it restarts and recovers its
// logs from what is on disk. Stopping is what moves the partitions on: the
// controlled shutdown hands this node's leaderships to in-sync replicas at
// once, where a node that only refused writes would keep them and stall
// its partitions. Kafka does the same when its only log directory fails.
// Called by segment with the log's locks held, so it only records the error.
func (n *Node) storageFailed(dir string, err error) {
	n.log.Error("partition log failed: stopping the node so its partitions move to in-sync replicas",
		"partition_dir", filepath.Base(dir), "err", err)
	go n.fail(fmt.Errorf("node: partition log %s failed: %w", filepath.Base(dir), err))
}

// Done is closed when the node stops on its own because of a fatal error.
func (n *Node) Done() <-chan struct{} { return n.done }

// Err is the first fatal error, or nil.
func (n *Node) Err() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.mu.err
}

// Addr is the bound UDP address.
func (n *Node) Addr() string { return n.ep.Addr() }

// ReloadTLS reads the node's ca.crt, certificate and key again; new
// connections use them when they changed (see quic.Endpoint.ReloadTLS).
func (n *Node) ReloadTLS() (changed bool, err error) { return n.ep.ReloadTLS() }

// TLSStatus describes the certificate the node presents and its reloads.
func (n *Node) TLSStatus() quic.TLSStatus { return n.ep.TLSStatus() }

// ID is the node id.
func (n *Node) ID() int32 { return n.cfg.ID }

// gatedStore is the store with Config.applyGate called before each entry.
type gatedStore struct {
	*metadata.Store
	gate func(index uint64)
}

func (g gatedStore) Apply(index uint64, data []byte) {
	g.gate(index)
	g.Store.Apply(index, data)
}

// Store exposes the metadata store (tests, status).
func (n *Node) Store() *metadata.Store { return n.store }

// Raft exposes the raft node (tests, status).
func (n *Node) Raft() *raftnode.Node { return n.raft }

// Broker exposes the broker (tests).
func (n *Node) Broker() *broker.Broker { return n.broker }

// Shutdown performs a controlled shutdown (see the package doc). When ctx
// expires the remaining steps run without waiting.
func (n *Node) Shutdown(ctx context.Context) error {
	n.mu.Lock()
	n.mu.closing = true
	n.mu.Unlock()
	n.controlledShutdown(ctx)
	n.cancel()
	n.audit.Stopped(n.selfWho(), n.Err())
	n.closeAll()
	n.wg.Wait()
	return nil
}

// Kill stops the node abruptly, without telling anyone (tests: a crash
// without goodbye; the on-disk state is whatever was written).
func (n *Node) Kill() {
	n.cancel()
	n.closeAll()
	n.wg.Wait()
}

func (n *Node) closeAll() {
	if n.broker != nil {
		n.broker.Close()
	}
	if n.raft != nil {
		n.raft.Close()
	}
	if n.ep != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		n.ep.Shutdown(sctx)
		cancel()
	}
	if err := n.audit.Close(); err != nil {
		n.log.Error("audit log close failed", "err", err)
	}
	n.lock.unlock() // last: the logs are closed
}
