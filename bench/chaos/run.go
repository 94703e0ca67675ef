package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"paymentlog/bench/localcluster"
	"paymentlog/client"
	"paymentlog/segment"
	"paymentlog/wire"
)

// Config configures Run. Zero fields take the defaults in their comments.
type Config struct {
	Binary string // the paymentlog binary the nodes run; required
	Seed   int64  // the schedule's seed; 0: derived from the clock (printed)
	// Nodes is the cluster's size, 3 to MaxNodes; default 3. The first
	// three are the controllers, the others broker-only nodes: the
	// topic's replicas (3 of each partition) are spread over all of them,
	// and a shrink's replicas may come back on other nodes (moves).
	Nodes int
	// Duration: inject faults until this much time has passed. Zero: exactly
	// one deck of the schedule (PerKind faults of every kind).
	Duration time.Duration
	PerKind  int // see Plan.PerKind; default 20
	// Script, when set, replaces the seeded schedule: exactly these faults,
	// in order (regression scenarios). Fault.N is assigned by the run.
	Script []Fault
	Kinds  []Kind // default every kind (partitions only where network namespaces work)
	// SessionTimeout is the nodes' --session-timeout; default 1s.
	SessionTimeout time.Duration
	// Fsync is the nodes' --fsync policy (always, interval=DURATION, never);
	// default always. Torn tails model a power loss on one node: under
	// interval or never that node may lose acknowledged records, which the
	// promise covers only because another in-sync replica holds them.
	Fsync     string
	Producers int           // default 4
	Consumers int           // default 2
	Interval  time.Duration // per producer, between records; default 5ms
	// Compression is the producers' codec (segment.CodecNone by default).
	Compression segment.Codec
	// Compact makes the topic compacted (compactConfigs: cleanup.policy
	// compact, tombstones kept for delete.retention.ms 1000) and runs the
	// nodes' log cleaners every compactCleanerInterval; the workload writes
	// keyed records (compactKeys hot keys per partition, and a
	// compactColdRatio share with one of compactColdKeys cold ones), a
	// compactTombstones share of them tombstones, and the checker allows the records the
	// cleaner may remove (checkCompacted).
	Compact      bool
	Pad          int   // payload filler bytes; default 64
	SegmentBytes int64 // the nodes' --segment-bytes; default 1 MiB (so segments roll)
	// SettleTimeout bounds the wait, after healing, for every replica to be
	// back in sync and every record resolved; default 90s.
	SettleTimeout time.Duration
	// DiskMiB is the size of each node's loop disk when DiskStall is
	// scheduled; default DefaultDiskMiB.
	DiskMiB int
	// DiskStallTimeout is the nodes' --disk-stall-timeout when DiskStall
	// is scheduled and the binary has the flag; default
	// DefaultDiskStallTimeout.
	DiskStallTimeout time.Duration
	BaseDir          string    // for the cluster directory; default os.TempDir()
	Keep             bool      // keep the cluster directory (data, node logs)
	KeepOnFailure    bool      // keep it when the checker finds an anomaly
	Out              io.Writer // the schedule as it runs and the report; default io.Discard
	Logger           *slog.Logger
}

// Result is a run's outcome.
type Result struct {
	Seed   int64
	Plan   Plan
	Events []Event
	Counts map[Kind]int // faults injected by kind as applied (TornTail: torn tails applied)
	// Fallbacks counts, by scheduled kind, faults that hit a random node
	// because no leader or controller was known (a kill among them is in
	// Counts as a kill-node).
	Fallbacks map[Kind]int
	Report    *Report
	History   *History
	Dir       string // the cluster directory (removed unless kept)
	Kept      bool
	NoNetNS   string // why network partitions did not run ("" if they did)
	NoDisk    string // why disk stalls did not run ("" if they did or were not asked for)
	// DiskStallTimeout is the nodes' --disk-stall-timeout in a run with
	// disk stalls (0: none, or the binary has no such flag).
	DiskStallTimeout time.Duration
	DiskUsage        string // each loop disk's use at the end of a run with disk stalls
	DiskDir          string // the directory of the disk images (holding Dir), "" without them
	Elapsed          time.Duration
	Topic            string
	Duration         time.Duration // Config.Duration (0: one deck)
	Flags            []string      // the chaos command's flags for Config's settings other than the defaults
	Settled          time.Duration // time from healing until in sync
	NodeLogs         []string
	// Unavailable is, by kind as applied, the longest unavailability
	// window that began while a fault of that kind was in effect (see
	// longestByKind).
	Unavailable map[Kind]KindWindow
}

// Compacted runs (Config.Compact): the topic's configs, and the nodes'
// --log-cleaner-interval. A dirty ratio of 0 cleans whenever anything is
// dirty and a short delete.retention.ms removes tombstones within the run,
// so that both kinds of removal happen while the faults go on.
const (
	compactCleanerInterval = 500 * time.Millisecond
	compactKeys            = 64    // hot keys per partition: each is rewritten every few dozen records
	compactColdKeys        = 4096  // cold keys per partition: each is rewritten every few minutes at most
	compactColdRatio       = 0.125 // share of records with a cold key
	compactTombstones      = 0.02  // share of records that are tombstones
)

var compactConfigs = map[string]string{
	"cleanup.policy":            "compact",
	"segment.bytes":             "1048576",
	"min.cleanable.dirty.ratio": "0",
	"delete.retention.ms":       "1000",
}

// scrubInterval is the nodes' --log-scrub-interval (their first pass too
// starts that long after a start), at an unlimited rate.
const scrubInterval = time.Second

// resumeWindow is how long the producers keep writing after the faults
// ended and before they stop: writes sent then must be acknowledged.
const resumeWindow = 2 * time.Second

// Topic is the chaos topic's name.
const Topic = "chaos"

// topicPartitions is the chaos topic's partition count; the plan, workload,
// nemesis, history and read-back all use it.
const topicPartitions = 3

// MaxNodes is the largest cluster Config.Nodes asks for.
const MaxNodes = 7

// Run starts a cluster (3 nodes, or Config.Nodes), runs the workload and the nemesis, heals,
// settles, reads everything back (through the cluster and from every
// replica's files) and checks the history. The error is for a run that
// could not be carried out; anomalies are in Result.Report.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg = cfg.withDefaults()
	if cfg.Nodes < 3 || cfg.Nodes > MaxNodes {
		return nil, fmt.Errorf("chaos: %d nodes: from 3 to %d", cfg.Nodes, MaxNodes)
	}
	out := cfg.Out
	res := &Result{Seed: cfg.Seed, Topic: Topic, Duration: cfg.Duration, Flags: cfg.reproduceFlags()}
	start := time.Now()
	kinds := cfg.Kinds
	var ns *localcluster.NetNS
	if slices.ContainsFunc(kinds, Kind.NeedsNetNS) {
		var err error
		if err = localcluster.NetNSAvailable(); err == nil {
			localcluster.CleanupStaleNetNS(ctx)
			ns, err = localcluster.NewNetNS(ctx)
		}
		if err != nil {
			res.NoNetNS = err.Error()
			fmt.Fprintf(out, "chaos: network faults skipped: %v\n", err)
			kinds = slices.DeleteFunc(slices.Clone(kinds), Kind.NeedsNetNS)
		} else {
			defer ns.Close()
		}
	}
	if slices.ContainsFunc(kinds, Kind.IsLink) {
		if err := localcluster.TCAvailable(); err != nil {
			res.NoNetNS = err.Error()
			fmt.Fprintf(out, "chaos: link faults skipped: %v\n", err)
			kinds = slices.DeleteFunc(slices.Clone(kinds), Kind.IsLink)
		}
	}
	scriptStalls := slices.ContainsFunc(cfg.Script, func(f Fault) bool { return f.Kind == DiskStall })
	if slices.Contains(kinds, DiskStall) || scriptStalls {
		if err := diskStallAvailable(); err != nil {
			res.NoDisk = err.Error()
			fmt.Fprintf(out, "chaos: disk stalls skipped: %v\n", err)
			kinds = slices.DeleteFunc(slices.Clone(kinds), func(k Kind) bool { return k == DiskStall })
			scriptStalls = false // the nemesis skips them (no disks)
		}
	}
	if cfg.Script == nil {
		why := strings.Join(slices.DeleteFunc([]string{res.NoNetNS, res.NoDisk}, func(s string) bool { return s == "" }), "; ")
		if err := checkSchedulable(kinds, cfg.Kinds, why); err != nil {
			return res, err
		}
	}
	var disks *Disks
	if slices.Contains(kinds, DiskStall) || scriptStalls {
		var err error
		if disks, err = NewDisks(cfg.BaseDir, cfg.DiskMiB); err != nil {
			return res, err
		}
		res.DiskDir = disks.Dir()
		defer func() {
			if err := disks.Close(); err != nil {
				fmt.Fprintf(out, "chaos: closing the loop disks: %v\n", err)
			}
			if !res.Kept {
				removeAll(disks.Dir())
			}
		}()
		if nodeHasFlag(ctx, cfg.Binary, diskStallFlag) {
			res.DiskStallTimeout = cfg.DiskStallTimeout
		}
	}
	plan := Plan{Seed: cfg.Seed, Kinds: kinds, PerKind: cfg.PerKind, Partitions: topicPartitions, Nodes: cfg.Nodes, SessionTimeout: cfg.SessionTimeout,
		DiskStallTimeout: res.DiskStallTimeout}
	sched := NewSchedule(plan)
	res.Plan = sched.Plan()
	fmt.Fprintf(out, "chaos: seed=%d nodes=%d kinds=%v per-kind=%d duration=%v session-timeout=%v fsync=%s compact=%v\n", cfg.Seed, cfg.Nodes, kinds, res.Plan.PerKind, cfg.Duration, cfg.SessionTimeout, cfg.Fsync, cfg.Compact)
	fmt.Fprintf(out, "chaos: %s\n", scrubRestartLine(cfg.Nodes))
	if disks != nil {
		fmt.Fprintf(out, "chaos: %s\n", diskStallLine(cfg.DiskMiB, res.DiskStallTimeout))
	}

	opts := localcluster.Options{
		Binary:  cfg.Binary,
		Nodes:   cfg.Nodes,
		BaseDir: cfg.BaseDir,
		Keep:    true, // decided at the end
		Logger:  cfg.Logger,
		ExtraArgs: []string{
			"--session-timeout", cfg.SessionTimeout.String(),
			"--segment-bytes", fmt.Sprint(cfg.SegmentBytes),
			"--fsync", cfg.Fsync,
			// Scrub every second at full speed: a rot-sealed torn tail
			// is found within a second or two of the node's restart.
			"--log-scrub-interval", scrubInterval.String(),
			"--log-scrub-bytes-per-sec", "0",
			// --log-scrub-restart is set per node (NodeArgs,
			// scrubRestartArgs): the even ids start again in
			// their process at their scrub's find, the odd ones
			// exit and the nemesis starts them again; either
			// stop repairs the rot (scrubRepairs).
		},
	}
	var topicConfigs map[string]string
	if cfg.Compact {
		opts.ExtraArgs = append(opts.ExtraArgs, "--log-cleaner-interval", compactCleanerInterval.String())
		topicConfigs = compactConfigs
	}
	if ns != nil {
		ns.Apply(&opts)
	}
	if disks != nil {
		disks.Apply(&opts) // after ns.Apply: wraps its command
		// /readyz, where the nemesis reads a disk-stall hold-down's end
		// (nemesis_holddown.go); with network namespaces on each node's
		// namespace address (NetNS.MetricsAddr).
		opts.Metrics = true
		if res.DiskStallTimeout > 0 {
			opts.ExtraArgs = append(opts.ExtraArgs, diskStallFlag, res.DiskStallTimeout.String())
		}
	}
	// Every node in a rack of its own, so that the second consumer
	// (ConsumerRacks) reads from followers (KIP-392) through the faults;
	// the even ids restart in their process at a scrub's find, the odd
	// ones exit (scrubRestartArgs).
	prevArgs := opts.NodeArgs
	opts.NodeArgs = func(id int32) []string {
		a := append([]string{"--rack", chaosRack(id)}, scrubRestartArgs(id)...)
		if prevArgs != nil {
			a = append(a, prevArgs(id)...)
		}
		return a
	}
	c, err := localcluster.Start(ctx, opts)
	if err != nil {
		return res, err
	}
	res.Dir = c.Dir()
	defer func() {
		// Thawed before the kills: a process blocked on a frozen disk
		// exits only after the thaw.
		if _, err := disks.ThawAll(); err != nil {
			fmt.Fprintf(out, "chaos: thawing the loop disks: %v\n", err)
		}
		res.DiskUsage = disks.Usage()
		c.Close()
		keep := cfg.Keep || (cfg.KeepOnFailure && res.Report != nil && !res.Report.OK())
		res.Kept = keep
		if !keep {
			removeAll(res.Dir)
		} else if err := res.WriteFiles(res.Dir); err != nil {
			fmt.Fprintf(out, "chaos: saving the history: %v\n", err)
		}
	}()
	for _, id := range c.IDs() {
		res.NodeLogs = append(res.NodeLogs, c.Node(id).LogPath)
	}
	fmt.Fprintf(out, "chaos: cluster in %s (node logs: %s)\n", c.Dir(), strings.Join(res.NodeLogs, " "))

	adminCl, err := client.New(ctx, client.Config{Bootstrap: c.Bootstrap(), TLS: c.ClientTLS(), Logger: cfg.Logger})
	if err != nil {
		return res, err
	}
	defer adminCl.Close(context.Background())
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	_, err = adminCl.Admin().CreateTopic(cctx, client.TopicSpec{Name: Topic, Partitions: topicPartitions, ReplicationFactor: 3, MinISR: 2,
		Configs: topicConfigs})
	cancel()
	// The cluster is new: a topic already there was made by an attempt of
	// this call that failed in transit or timed out (the client says so),
	// and the wait below checks it is whole.
	if err != nil && client.ErrorCode(err) != wire.TopicAlreadyExists {
		return res, fmt.Errorf("chaos: create topic: %w", err)
	}
	if err := c.WaitFor(ctx, func(ctx context.Context) (bool, error) { return c.InSync(ctx, Topic) }); err != nil {
		return res, fmt.Errorf("chaos: topic never in sync: %w", err)
	}

	wcfg := WorkloadConfig{
		Bootstrap: c.Bootstrap(), TLS: c.ClientTLS(), Topic: Topic, Partitions: topicPartitions,
		Producers: cfg.Producers, Consumers: cfg.Consumers, Interval: cfg.Interval, Pad: cfg.Pad, Logger: cfg.Logger,
		Compression: cfg.Compression, Seed: cfg.Seed,
		ConsumerRacks: []string{"", chaosRack(2)},
	}
	if cfg.Compact {
		wcfg.Keys, wcfg.ColdKeys, wcfg.ColdRatio, wcfg.TombstoneRatio = compactKeys, compactColdKeys, compactColdRatio, compactTombstones
	}
	wl, err := StartWorkload(ctx, wcfg)
	if err != nil {
		return res, err
	}
	h := &History{Start: start, Partitions: topicPartitions, Consumers: cfg.Consumers, Members: wl.Members(), Compacted: cfg.Compact}
	nem := &Nemesis{C: c, NS: ns, Topic: Topic, Partitions: topicPartitions, Workload: wl, Start: start, Out: out, Logger: cfg.Logger,
		Admin: adminCl.Admin(), Disks: disks}
	defer nem.Close()

	deck := sched.DeckSize()
	var src Source = sched
	if cfg.Script != nil {
		src, deck = &scriptSource{faults: cfg.Script}, len(cfg.Script)
	}
	faultStart := time.Now()
	stop := func(done int) bool {
		if cfg.Duration > 0 && cfg.Script == nil {
			return time.Since(faultStart) >= cfg.Duration
		}
		return done >= deck
	}
	nemErr := nem.Run(ctx, src, stop)
	res.Events = nem.Events()
	res.Counts = nem.Counts()
	res.Fallbacks = nem.Fallbacks()
	h.FaultsApplied = appliedTotal(res.Counts)
	fmt.Fprintf(out, "chaos: %d faults dealt (%d applied) in %v; workload: %s\n", len(res.Events), h.FaultsApplied, time.Since(faultStart).Round(time.Second), wl)
	if nemErr != nil {
		if err := nem.HealNetwork(context.WithoutCancel(ctx)); err != nil {
			fmt.Fprintf(out, "chaos: heal: %v\n", err)
		}
		wl.StopProducers(context.Background())
		wl.StopConsumers()
		return res, nemErr
	}

	// Heal, keep writing for resumeWindow (the check wants acknowledgements
	// of records sent after the faults), let every record resolve, and
	// wait until every replica is in sync.
	healStart := time.Now()
	if err := nem.HealAll(ctx); err != nil {
		fmt.Fprintf(out, "chaos: heal: %v\n", err)
	}
	h.FaultsEnd = time.Now()
	wait(ctx, resumeWindow)
	sctx, scancel := context.WithTimeout(ctx, cfg.SettleTimeout)
	defer scancel()
	if err := wl.StopProducers(sctx); err != nil {
		fmt.Fprintf(out, "chaos: closing producers: %v\n", err)
	}
	convErr := waitConverged(sctx, c, nem)
	res.Settled = time.Since(healStart)
	h.Converged = convErr == nil
	if convErr != nil {
		h.ConvergeErr = convErr.Error()
		fmt.Fprintf(out, "chaos: replicas did not converge: %v\n", convErr)
	}
	h.Final = readBack(sctx, c, cfg, wl)
	waitConsumers(sctx, wl, h.Final)
	wl.StopConsumers()
	h.End = time.Now()
	h.Writes, h.Reads, h.Divergences = wl.Writes(), wl.Reads(), wl.Divergences()
	h.MemberReads, h.MemberDivergences = wl.MemberReads(), wl.MemberDivergences()
	h.MemberRejoins, h.MemberDeaths = wl.MemberRejoins()
	h.MemberStalls, h.StallsLeft = wl.MemberStalls()
	h.Groups, h.Commits = true, wl.Commits()
	// The settle deadline may be spent by now (consumers that never reach
	// the final HW are waited for until it is): the groups' offsets get a
	// deadline of their own, or a failed run would also report them
	// unverified.
	rctx, rcancel := context.WithTimeout(ctx, readCommittedTimeout)
	h.Committed, h.CommittedErr = readCommitted(rctx, adminCl.Admin(), h.Consumers)
	rcancel()

	// Every replica's own HW and LEO, the final ISR, then the files.
	type rstate struct{ hw, leo int64 }
	states := map[[2]int32]rstate{}
	for _, id := range c.IDs() {
		for p := range int32(topicPartitions) {
			if r, err := nem.DescribeReplica(ctx, id, p); err == nil {
				states[[2]int32{id, p}] = rstate{r.HighWatermark, r.LogEnd}
			}
		}
	}
	isr, replicas := map[int32][]int32{}, map[int32][]int32{}
	if v, err := c.Metadata(ctx, Topic); err == nil {
		for p := range int32(topicPartitions) {
			if pm, ok := v.Partition(Topic, p); ok {
				isr[p], replicas[p] = pm.ISR, pm.Replicas
			}
		}
	}
	h.Exits, h.Rots = nem.Exits(), nem.Rots()
	for _, id := range c.IDs() {
		if c.Node(id).Running {
			c.Kill(id)
		}
	}
	for _, id := range c.IDs() {
		for p := range int32(topicPartitions) {
			rl := ReplicaLog{Node: id, Partition: p, InISR: slices.Contains(isr[p], id), HW: -1, LEO: -1}
			if st, ok := states[[2]int32{id, p}]; ok {
				rl.HW, rl.LEO = st.hw, st.leo
			}
			dir := filepath.Join(disks.Path(id, c.Node(id).DataDir), fmt.Sprintf("%s-%d", Topic, p))
			if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) && replicas[p] != nil && !slices.Contains(replicas[p], id) {
				continue // not a replica (more nodes than replicas): nothing to compare
			}
			scan, err := ScanPartition(dir, true)
			switch {
			case err != nil:
				rl.Err = err.Error()
			case scan.Err != nil:
				rl.Err = scan.Err.Error()
			default:
				rl.Batches, rl.Records = scan.Batches, scan.Records
			}
			h.Replicas = append(h.Replicas, rl)
		}
	}
	// The nodes' logs, whole, now that every process is gone.
	logs := map[int32][]byte{}
	for _, id := range c.IDs() {
		if b, err := os.ReadFile(c.Node(id).LogPath); err == nil {
			logs[id] = b
		} else {
			fmt.Fprintf(out, "chaos: reading node %d's log: %v\n", id, err)
		}
	}
	h.LivePortFences = livePortFences(logs)
	res.History = h
	res.Report = Check(h)
	res.Unavailable = longestByKind(res.Events, allWindows(h), start)
	res.Elapsed = time.Since(start)
	return res, nil
}

func (cfg Config) withDefaults() Config {
	if cfg.Seed == 0 {
		cfg.Seed = time.Now().UnixNano() % 1_000_000_007
	}
	if len(cfg.Kinds) == 0 {
		cfg.Kinds = append([]Kind(nil), AllKinds...)
	}
	if cfg.PerKind <= 0 {
		cfg.PerKind = 20
	}
	if cfg.Fsync == "" {
		cfg.Fsync = "always"
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = time.Second
	}
	if cfg.Nodes <= 0 {
		cfg.Nodes = 3
	}
	if cfg.Producers <= 0 {
		cfg.Producers = 4
	}
	if cfg.Consumers <= 0 {
		cfg.Consumers = 2 // also History.Consumers: each must read to the HW
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 5 * time.Millisecond
	}
	if cfg.Pad == 0 {
		cfg.Pad = 64
	}
	if cfg.SegmentBytes <= 0 {
		cfg.SegmentBytes = 1 << 20
	}
	if cfg.DiskMiB <= 0 {
		cfg.DiskMiB = DefaultDiskMiB
	}
	if cfg.DiskStallTimeout <= 0 {
		cfg.DiskStallTimeout = DefaultDiskStallTimeout
	}
	if cfg.SettleTimeout <= 0 {
		cfg.SettleTimeout = 90 * time.Second
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return cfg
}

// scriptSource replays a fixed list of faults.
type scriptSource struct {
	faults []Fault
	n      int
}

func (s *scriptSource) Next() Fault {
	f := s.faults[s.n%len(s.faults)]
	s.n++
	f.N = s.n
	return f
}

// waitConverged waits until every partition has a leader and its full
// replica set in the ISR, and every replica reports the same log end and
// high watermark.
func waitConverged(ctx context.Context, c *localcluster.Cluster, nem *Nemesis) error {
	return localcluster.Poll(ctx, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		nem.restartCrashed(ctx)
		if ok, err := c.InSync(ctx, Topic); !ok {
			return false, err
		}
		v, err := c.Metadata(ctx, Topic)
		if err != nil {
			return false, err
		}
		for p := range int32(topicPartitions) {
			pm, ok := v.Partition(Topic, p)
			if !ok {
				return false, fmt.Errorf("partition %d unknown", p)
			}
			var first *[2]int64
			for _, id := range pm.Replicas {
				r, err := nem.DescribeReplica(ctx, id, p)
				if err != nil {
					return false, fmt.Errorf("partition %d node %d: %w", p, id, err)
				}
				got := [2]int64{r.LogEnd, r.HighWatermark}
				if first == nil {
					first = &got
				} else if *first != got {
					return false, fmt.Errorf("partition %d: replicas differ: (leo, hw) %v on node %d vs %v", p, got, id, *first)
				}
				if r.HighWatermark != r.LogEnd {
					return false, fmt.Errorf("partition %d node %d: hw %d below leo %d", p, id, r.HighWatermark, r.LogEnd)
				}
			}
		}
		return true, nil
	})
}

// readCommittedTimeout bounds reading every group's offsets back at the end.
const readCommittedTimeout = 30 * time.Second

// readCommitted reads every consumer's group offsets back, once the
// consumers have stopped: consumer -> partition -> offset, and why a group
// could not be read.
func readCommitted(ctx context.Context, a *client.Admin, consumers int) (map[int]map[int32]int64, map[int]string) {
	got, errs := map[int]map[int32]int64{}, map[int]string{}
	for c := range consumers {
		offs, err := a.FetchOffsets(ctx, GroupName(c), Topic)
		if err != nil {
			errs[c] = err.Error()
			continue
		}
		got[c] = map[int32]int64{}
		for _, o := range offs {
			got[c][o.Partition] = o.Offset
		}
	}
	return got, errs
}

// readBack reads every partition from its leader, from the log start to
// the high watermark, with a fresh consumer.
func readBack(ctx context.Context, c *localcluster.Cluster, cfg Config, wl *Workload) []PartitionLog {
	out := make([]PartitionLog, topicPartitions)
	for p := range out {
		out[p] = PartitionLog{Partition: int32(p)}
	}
	cl, err := client.New(ctx, client.Config{Bootstrap: c.Bootstrap(), TLS: c.ClientTLS(), Logger: cfg.Logger})
	if err != nil {
		for p := range out {
			out[p].Err = err.Error()
		}
		return out
	}
	defer cl.Close(context.Background())
	cons := cl.NewConsumer(client.ConsumerConfig{})
	defer cons.Close()
	tps := make([]client.TopicPartition, topicPartitions)
	for p := range tps {
		tps[p] = client.TopicPartition{Topic: Topic, Partition: int32(p)}
	}
	ends, err := cons.EndOffsets(ctx, tps)
	if err == nil {
		var starts map[client.TopicPartition]int64
		if starts, err = cons.BeginningOffsets(ctx, tps); err == nil {
			for p, tp := range tps {
				out[p].Start, out[p].HW = starts[tp], ends[tp]
			}
		}
	}
	if err != nil {
		for p := range out {
			out[p].Err = "offsets: " + err.Error()
		}
		return out
	}
	cons.Assign(tps, 0)
	for p := range out {
		cons.Seek(tps[p], out[p].Start)
	}
	for {
		done := true
		for p := range out {
			if pos, _ := cons.Position(tps[p]); pos < out[p].HW {
				done = false
			}
		}
		if done {
			return out
		}
		msgs, err := cons.Poll(ctx)
		for _, m := range msgs {
			if m.Offset < out[m.Partition].HW {
				k, v, tomb := storedValue(m.Key, m.Value, m.Headers)
				out[m.Partition].Records = append(out[m.Partition].Records, LogRecord{Offset: m.Offset, Value: v, Epoch: m.LeaderEpoch, Key: k, Tombstone: tomb})
			}
		}
		if ctx.Err() != nil {
			for p := range out {
				if pos, _ := cons.Position(tps[p]); pos < out[p].HW {
					out[p].Err = fmt.Sprintf("read back only to offset %d of %d: %v", pos, out[p].HW, err)
				}
			}
			return out
		}
	}
}

// waitConsumers waits until the workload's consumers, and its group
// members together, have read every partition up to the final HW, except
// where a consumer was told its history diverged: it reads that partition
// no further (the checker reports it), and waiting for it would only spend
// the settle timeout.
func waitConsumers(ctx context.Context, wl *Workload, final []PartitionLog) {
	localcluster.Poll(ctx, 50*time.Millisecond, func(context.Context) (bool, error) {
		stopped := map[[2]int]bool{}
		for _, d := range wl.Divergences() {
			stopped[[2]int{d.Consumer, int(d.Partition)}] = true
		}
		for c, m := range wl.ReadPositions() {
			for _, pl := range final {
				if m[pl.Partition] < pl.HW && !stopped[[2]int{c, int(pl.Partition)}] {
					return false, nil
				}
			}
		}
		if wl.Members() > 0 {
			m, cut := wl.MemberPositions(), wl.MemberTruncated()
			for _, pl := range final {
				if m[pl.Partition] < pl.HW && !cut[pl.Partition] {
					return false, nil
				}
			}
		}
		return true, nil
	})
}

// WriteSummary prints the fault counts and the checker's report.
func (r *Result) WriteSummary(w io.Writer) {
	fmt.Fprintf(w, "chaos: seed=%d elapsed=%v settle=%v\n", r.Seed, r.Elapsed.Round(time.Second), r.Settled.Round(time.Millisecond))
	fmt.Fprintf(w, "faults: %d applied:", appliedTotal(r.Counts))
	for _, k := range r.reportKinds() {
		fmt.Fprintf(w, " %s=%d", k, r.Counts[k])
	}
	if r.Counts[TornTail] > 0 {
		// A torn tail is not a fault of its own: it rides on a kill, so
		// it is counted under the kill too and left out of the total.
		fmt.Fprintf(w, " (a torn tail rides on a kill: counted under both, once in the total)")
	}
	fmt.Fprintln(w)
	if byMode := tornByMode(r.Events); len(byMode) > 0 {
		fmt.Fprintf(w, "torn tails by mode as applied:")
		for _, m := range tornModes {
			if byMode[m] > 0 {
				fmt.Fprintf(w, " %s=%d", m, byMode[m])
			}
		}
		fmt.Fprintln(w)
	}
	if out, in := oneWayByDir(r.Events); out+in > 0 {
		fmt.Fprintf(w, "one-way: %d cannot send, %d cannot receive\n", out, in)
	}
	if len(r.Unavailable) > 0 {
		fmt.Fprintf(w, "longest unavailability by the kind of fault in effect when it began:")
		for _, k := range r.reportKinds() {
			if kw, ok := r.Unavailable[k]; ok {
				fmt.Fprintf(w, " %s=%v (fault #%d, partition %d)", k, kw.Window.Len().Round(time.Millisecond), kw.Fault, kw.Window.Partition)
			}
		}
		fmt.Fprintln(w)
	}
	if len(r.Fallbacks) > 0 {
		fmt.Fprintf(w, "fallbacks (no leader or controller known: a random node was hit, a kill counted as %s):", KillNode)
		for _, k := range KnownKinds {
			if n := r.Fallbacks[k]; n > 0 {
				fmt.Fprintf(w, " %s=%d", k, n)
			}
		}
		fmt.Fprintln(w)
	}
	if r.NoNetNS != "" {
		fmt.Fprintf(w, "network faults skipped: %s\n", r.NoNetNS)
	}
	if r.NoDisk != "" {
		fmt.Fprintf(w, "disk stalls skipped: %s\n", r.NoDisk)
	}
	if r.DiskUsage != "" {
		fmt.Fprintf(w, "loop disks used: %s\n", r.DiskUsage)
	}
	if l := scrubRestartLine(r.Plan.Nodes); l != "" {
		fmt.Fprintln(w, l)
	}
	if r.Report != nil {
		r.Report.WriteText(w)
	}
	if r.Kept {
		fmt.Fprintf(w, "cluster directory kept: %s\n", r.Dir)
		if r.DiskDir != "" {
			fmt.Fprintf(w, "the nodes' data directories are empty mount points: their files are in the disk images kept in %s (mount -o loop IMAGE DIR to read one)\n", r.DiskDir)
		}
	}
	fmt.Fprintf(w, "reproduce: scripts/chaos.sh --seed %d", r.Seed)
	if !slices.Equal(r.Plan.Kinds, AllKinds) && len(r.Plan.Kinds) > 0 {
		ks := make([]string, len(r.Plan.Kinds))
		for i, k := range r.Plan.Kinds {
			ks[i] = string(k)
		}
		fmt.Fprintf(w, " --kinds %s", strings.Join(ks, ","))
	}
	if r.Duration > 0 {
		fmt.Fprintf(w, " --duration %v", r.Duration)
	} else if r.Plan.PerKind > 0 {
		fmt.Fprintf(w, " --per-kind %d", r.Plan.PerKind)
	}
	for _, f := range r.Flags {
		fmt.Fprintf(w, " %s", f)
	}
	fmt.Fprintln(w)
}

// tornModes lists the torn tail modes in report order.
var tornModes = []TornMode{TornCutUnacked, TornGarbage, TornCutAcked, TornOverwrite, TornRot, TornWipe}

// tornByMode counts the torn tails applied (that changed a byte) by the
// mode applied, after any fallback.
func tornByMode(events []Event) map[TornMode]int {
	out := map[TornMode]int{}
	for _, e := range events {
		if e.Torn != nil && e.Torn.Applied() && !e.NotApplied {
			out[e.Torn.Mode]++
		}
	}
	return out
}

// appliedTotal is the number of faults applied, from Counts: every kind but
// TornTail, which rides on a kill counted under its own kind.
func appliedTotal(counts map[Kind]int) int {
	n := 0
	for k, c := range counts {
		if k != TornTail {
			n += c
		}
	}
	return n
}

// reproduceFlags are the chaos command's flags for the settings of cfg
// (defaults applied) that differ from the defaults and shape the run: the
// nodes' fsync policy and session timeout, the workload and the topic's
// compaction. Without them
// the report's "reproduce" line ran a different experiment (an --fsync
// interval run was repeated with fsync always).
func (cfg Config) reproduceFlags() []string {
	def := Config{}.withDefaults()
	var out []string
	if cfg.Nodes != def.Nodes {
		out = append(out, fmt.Sprintf("--nodes %d", cfg.Nodes))
	}
	if cfg.Fsync != def.Fsync {
		out = append(out, "--fsync "+cfg.Fsync)
	}
	if cfg.SessionTimeout != def.SessionTimeout {
		out = append(out, "--session-timeout "+cfg.SessionTimeout.String())
	}
	if cfg.Producers != def.Producers {
		out = append(out, fmt.Sprintf("--producers %d", cfg.Producers))
	}
	if cfg.Consumers != def.Consumers {
		out = append(out, fmt.Sprintf("--consumers %d", cfg.Consumers))
	}
	if cfg.Interval != def.Interval {
		out = append(out, "--interval "+cfg.Interval.String())
	}
	if cfg.Compression != def.Compression {
		out = append(out, "--compression "+cfg.Compression.String())
	}
	if cfg.Compact {
		out = append(out, "--compact")
	}
	if cfg.DiskMiB != def.DiskMiB {
		out = append(out, fmt.Sprintf("--disk-mib %d", cfg.DiskMiB))
	}
	if cfg.DiskStallTimeout != def.DiskStallTimeout {
		out = append(out, "--disk-stall-timeout "+cfg.DiskStallTimeout.String())
	}
	return out
}

func removeAll(dir string) error {
	if dir == "" {
		return errors.New("chaos: no dir")
	}
	return os.RemoveAll(dir)
}

// chaosRack is node id's rack in a chaos run.
func chaosRack(id int32) string { return fmt.Sprintf("az%d", id) }
