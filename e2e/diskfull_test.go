package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"paymentlog/bench/chaos"
	"paymentlog/bench/localcluster"
	"paymentlog/client"
	"paymentlog/quic"
	"paymentlog/wire"
)

// Full-disk tests: real node processes whose data directories are small
// ext4 file systems (smallDisk) that the test fills with a filler file and
// frees again. DESIGN §8 lists a full disk among the failures defended
// against: no acknowledged record lost, no offset holding two records,
// replicas agreeing below the HW, a clear error rather than a crash.

const (
	dfTopic   = "payments"
	dfDiskMiB = 64
)

// dfCluster is a 3-node cluster, every node on its own small disk.
type dfCluster struct {
	t     *testing.T
	c     *localcluster.Cluster
	disks map[int32]*smallDisk
	cl    *client.Client

	mu    sync.Mutex
	acked map[int64]string // offset -> value of every acknowledged record
	errs  map[string]int   // delivery errors by message

	topics int // topics createTopics made
}

func startDiskFullCluster(t *testing.T, ctx context.Context) *dfCluster {
	return startDiskFullClusterOn(t, ctx, "ext4")
}

// startDiskFullClusterOn is startDiskFullCluster on fsType (ext4 or tmpfs).
func startDiskFullClusterOn(t *testing.T, ctx context.Context, fsType string) *dfCluster {
	t.Helper()
	return startDiskFullClusterSized(t, ctx, fsType, dfDiskMiB)
}

// startDiskFullClusterSized is startDiskFullClusterOn with disks of
// diskMiB and extra arguments for every node (after the defaults: a flag
// given again there wins).
func startDiskFullClusterSized(t *testing.T, ctx context.Context, fsType string, diskMiB int, extra ...string) *dfCluster {
	t.Helper()
	requireDiskTools(t)
	base, imgs := t.TempDir(), t.TempDir()
	dc := &dfCluster{t: t, disks: map[int32]*smallDisk{}, acked: map[int64]string{}, errs: map[string]int{}}
	var diskMu sync.Mutex
	disk := func(id int32) (*smallDisk, error) {
		diskMu.Lock()
		defer diskMu.Unlock()
		if d := dc.disks[id]; d != nil {
			return d, nil
		}
		dirs, _ := filepath.Glob(filepath.Join(base, "paymentlog-cluster-*", fmt.Sprintf("node%d", id), "data"))
		if len(dirs) != 1 {
			return nil, fmt.Errorf("data dir of node %d: found %v", id, dirs)
		}
		d := newSmallDisk(t, imgs, dirs[0], diskMiB, fsType)
		dc.disks[id] = d
		return d, nil
	}
	c, err := localcluster.Start(ctx, localcluster.Options{
		Binary:   binary,
		BaseDir:  base,
		Insecure: true,
		Metrics:  true, // for tests that read the nodes' series (dfCluster.diskMetrics)
		ExtraArgs: append([]string{
			"--segment-bytes", fmt.Sprint(1 << 20),
			"--replica-lag-time", "1s",
			"--log-level", "info",
		}, extra...),
		BeforeStart: func(ctx context.Context, id int32) error {
			_, err := disk(id)
			return err
		},
		Command: func(id int32, argv []string) []string {
			d, err := disk(id)
			if err != nil {
				panic(err) // BeforeStart made it
			}
			return d.Wrap(argv)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	dc.c = c
	t.Cleanup(func() {
		if t.Failed() {
			for _, id := range c.IDs() {
				t.Logf("--- node %d log (last lines):\n%s", id, c.LogTail(id, 40))
			}
		}
		if dc.cl != nil {
			dc.cl.Close(context.Background())
		}
		c.Close()
	})
	dc.cl, err = client.New(ctx, client.Config{Bootstrap: c.Bootstrap(), TLS: quic.TLSConfig{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dc.cl.Admin().CreateTopic(ctx, client.TopicSpec{Name: dfTopic, Partitions: 1, ReplicationFactor: 3, MinISR: 2}); err != nil {
		t.Fatal(err)
	}
	dc.waitUnguarded(ctx)
	return dc
}

// partition returns partition 0's metadata as the freshest node sees it.
func (dc *dfCluster) partition(ctx context.Context) (wire.PartitionMetadata, int32, error) {
	v, err := dc.c.Metadata(ctx, dfTopic)
	if err != nil {
		return wire.PartitionMetadata{}, -1, err
	}
	pm, ok := v.Partition(dfTopic, 0)
	if !ok {
		return pm, v.ControllerID, fmt.Errorf("no partition 0 in metadata from node %d", v.From)
	}
	return pm, v.ControllerID, nil
}

// producer writes records "v-<n>" with acks=all until stop, recording
// every acknowledgement.
func (dc *dfCluster) producer(ctx context.Context) (stop func()) {
	p, err := dc.cl.NewProducer(client.ProducerConfig{Acks: client.AcksAll, Linger: 2 * time.Millisecond, DeliveryTimeout: 30 * time.Second, RequestTimeout: 5 * time.Second})
	if err != nil {
		dc.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	pad := strings.Repeat("x", 200)
	go func() {
		defer close(done)
		for n := 0; ctx.Err() == nil; n++ {
			v := fmt.Sprintf("v-%d-%s", n, pad)
			err := p.Produce(ctx, &client.Record{Topic: dfTopic, Partition: 0, PartitionSet: true, Value: []byte(v)}, func(d client.Delivery) {
				dc.mu.Lock()
				defer dc.mu.Unlock()
				if d.Err != nil {
					dc.errs[d.Err.Error()]++
					return
				}
				if old, ok := dc.acked[d.Offset]; ok {
					dc.t.Errorf("offset %d acknowledged twice: %.12s and %.12s", d.Offset, old, v)
				}
				dc.acked[d.Offset] = v
			})
			if err != nil {
				return
			}
			if n%50 == 0 {
				time.Sleep(5 * time.Millisecond) // keep the rate moderate: about 10k records/s at most
			}
		}
	}()
	// Idempotent: a test stops the producer where it needs to and defers
	// the same call for its failure paths.
	return sync.OnceFunc(func() {
		fctx, fcancel := context.WithTimeout(context.Background(), 40*time.Second)
		defer fcancel()
		_ = p.Flush(fctx)
		cancel()
		<-done
		_ = p.Close(fctx)
	})
}

func (dc *dfCluster) ackedCount() int {
	dc.mu.Lock()
	defer dc.mu.Unlock()
	return len(dc.acked)
}

// waitAcks waits until n more records than now are acknowledged.
func (dc *dfCluster) waitAcks(ctx context.Context, n int, d time.Duration, what string) {
	dc.t.Helper()
	want := dc.ackedCount() + n
	waitFor(ctx, dc.t, d, what, func() (bool, string) {
		dc.mu.Lock()
		defer dc.mu.Unlock()
		return len(dc.acked) >= want, fmt.Sprintf("%d of %d acknowledged; delivery errors %v", len(dc.acked), want, dc.errs)
	})
}

// noCrashes fails the test if a node process exited on its own.
func (dc *dfCluster) noCrashes() {
	dc.t.Helper()
	for _, cr := range dc.c.Crashes() {
		dc.t.Errorf("node %d exited: %v; log:\n%s", cr.ID, cr.Err, dc.c.LogTail(cr.ID, 400))
	}
}

// waitInSync waits until partition 0 has a leader and all three replicas
// in its ISR, and every replica's log end equals the leader's HW.
func (dc *dfCluster) waitInSync(ctx context.Context, d time.Duration) {
	dc.t.Helper()
	waitFor(ctx, dc.t, d, "all replicas in sync", func() (bool, string) {
		pm, _, err := dc.partition(ctx)
		if err != nil {
			return false, err.Error()
		}
		if pm.Leader < 0 || len(pm.ISR) != 3 {
			return false, fmt.Sprintf("leader %d isr %v", pm.Leader, pm.ISR)
		}
		var hw int64 = -1
		var ends []string
		for _, id := range dc.c.IDs() {
			r, err := dc.describeReplica(ctx, id)
			if err != nil {
				return false, fmt.Sprintf("node %d: %v", id, err)
			}
			if r.IsLeader {
				hw = r.HighWatermark
			}
			ends = append(ends, fmt.Sprintf("node %d leo %d hw %d", id, r.LogEnd, r.HighWatermark))
		}
		for _, id := range dc.c.IDs() {
			r, _ := dc.describeReplica(ctx, id)
			if r == nil || r.LogEnd != hw || r.HighWatermark != hw {
				return false, strings.Join(ends, ", ")
			}
		}
		return true, ""
	})
}

func (dc *dfCluster) describeReplica(ctx context.Context, id int32) (*wire.DescribeReplicaResponse, error) {
	var resp wire.DescribeReplicaResponse
	if err := dc.call(ctx, id, wire.TypeDescribeReplica, &wire.DescribeReplicaRequest{Topic: dfTopic, Partition: 0}, &resp); err != nil {
		return nil, err
	}
	if resp.Err != wire.None {
		return nil, resp.Err.Err("")
	}
	return &resp, nil
}

// call sends one request to node id.
func (dc *dfCluster) call(ctx context.Context, id int32, t quic.FrameType, req, resp any) error {
	ep, err := quic.New(ctx, quic.Config{})
	if err != nil {
		return err
	}
	defer ep.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	return ep.Call(ctx, dc.c.Node(id).Addr, t, req, resp)
}

// waitUnguarded waits until no controller is vote-guarded: right after a
// cluster's first start each waits to hear from all the others (the rejoin
// guard, README), and until then losing one controller stops elections.
func (dc *dfCluster) waitUnguarded(ctx context.Context) {
	dc.t.Helper()
	waitFor(ctx, dc.t, 20*time.Second, "no controller vote-guarded", func() (bool, string) {
		for _, id := range dc.c.IDs() {
			var resp wire.DescribeQuorumResponse
			if err := dc.call(ctx, id, wire.TypeDescribeQuorum, &wire.DescribeQuorumRequest{}, &resp); err != nil {
				return false, fmt.Sprintf("node %d: %v", id, err)
			}
			if resp.Guarded {
				return false, fmt.Sprintf("node %d guarded", id)
			}
		}
		return true, ""
	})
}

// checkReplicas reads partition 0 from every replica's files and checks
// that every acknowledged record is there once, at its offset, and that
// the replicas hold the same records.
func (dc *dfCluster) checkReplicas() {
	dc.t.Helper()
	dc.mu.Lock()
	defer dc.mu.Unlock()
	var first map[int64]string
	for _, id := range dc.c.IDs() {
		dir := dc.disks[id].Path(filepath.Join(dc.c.Node(id).DataDir, dfTopic+"-0"))
		s, err := chaos.ScanPartition(dir, true)
		if err != nil {
			dc.t.Fatalf("node %d: %v", id, err)
		}
		if s.Err != nil {
			dc.t.Errorf("node %d: %v", id, s.Err)
		}
		at := map[int64]string{}
		seen := map[string]int64{}
		for _, r := range s.Records {
			at[r.Offset] = r.Value
			if o, dup := seen[r.Value]; dup {
				dc.t.Errorf("node %d: record %.12s at offsets %d and %d", id, r.Value, o, r.Offset)
			}
			seen[r.Value] = r.Offset
		}
		missing := 0
		for off, v := range dc.acked {
			if at[off] != v {
				if missing < 5 {
					dc.t.Errorf("node %d: acknowledged record %.12s at offset %d: have %.12q", id, v, off, at[off])
				}
				missing++
			}
		}
		if missing > 0 {
			dc.t.Errorf("node %d: %d of %d acknowledged records missing or moved", id, missing, len(dc.acked))
		}
		if first == nil {
			first = at
			continue
		}
		if len(first) != len(at) {
			dc.t.Errorf("node %d holds %d records, node %d holds %d", id, len(at), dc.c.IDs()[0], len(first))
		}
		differ := 0
		for off, v := range at {
			if w, ok := first[off]; ok && w != v {
				differ++
			}
		}
		if differ > 0 {
			dc.t.Errorf("node %d and node %d hold different records at %d offsets", id, dc.c.IDs()[0], differ)
		}
	}
	dc.t.Logf("%d acknowledged records read back from every replica; delivery errors: %v", len(dc.acked), dc.errs)
}

// TestDiskFullFollower: a follower's disk fills while acks=all writes go
// on (RF 3, min ISR 2). Writes continue without it (it leaves the ISR),
// it does not crash, and once space returns it catches up and rejoins the
// ISR; every acknowledged record is on every replica once, at its offset.
func TestDiskFullFollower(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dc := startDiskFullCluster(t, ctx)
	pm, ctrl, err := dc.partition(ctx)
	if err != nil {
		t.Fatal(err)
	}
	victim := follower(pm, ctrl)
	t.Logf("leader %d, controller %d, filling follower %d", pm.Leader, ctrl, victim)
	stop := dc.producer(ctx)
	defer stop()
	dc.waitAcks(ctx, 500, 15*time.Second, "writes before the disk fills")
	dc.disks[victim].fill(t)
	dc.waitISR(ctx, victim, false, 15*time.Second)
	// Metadata changes while the disk is full (the full node is fenced:
	// two brokers are available).
	dc.createTopics(ctx, 3, 2)
	dc.waitAcks(ctx, 2000, 15*time.Second, "writes with the follower's disk full")
	holdFull(ctx, 3*time.Second)
	dc.waitAcks(ctx, 500, 15*time.Second, "writes with the follower's disk full")
	dc.requireLog(victim, "disk full: holding back broker heartbeats")
	dc.noCrashes()
	if !dc.c.Node(victim).Running {
		t.Fatalf("node %d is not running with its disk full", victim)
	}
	dc.disks[victim].free(t)
	dc.waitISR(ctx, victim, true, 20*time.Second)
	dc.waitAcks(ctx, 500, 15*time.Second, "writes after space returned")
	stop()
	dc.waitInSync(ctx, 20*time.Second)
	dc.noCrashes()
	dc.checkReplicas()
	dc.logNotable(victim)
}

// logNotable logs the lines of node id's log at WARN or ERROR level.
func (dc *dfCluster) logNotable(id int32) {
	dc.t.Helper()
	b, err := os.ReadFile(dc.c.Node(id).LogPath)
	if err != nil {
		dc.t.Log(err)
		return
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") || strings.Contains(l, "panic") || strings.HasPrefix(l, "###") {
			out = append(out, l)
		}
	}
	if len(out) > 60 {
		out = append(out[:30], append([]string{"..."}, out[len(out)-30:]...)...)
	}
	dc.t.Logf("node %d warnings and errors:\n%s", id, strings.Join(out, "\n"))
}

// holdFull keeps a disk full a while (writes go on meanwhile); not a wait
// for a condition: the point is time spent full.
func holdFull(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// createTopics creates n topics with long names (metadata entries big
// enough to need new blocks in the metadata log) of replication factor rf.
func (dc *dfCluster) createTopics(ctx context.Context, n int, rf int32) {
	dc.t.Helper()
	for i := range n {
		dc.topics++
		name := fmt.Sprintf("t%d-%s", dc.topics, strings.Repeat("m", 200))
		cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		_, err := dc.cl.Admin().CreateTopic(cctx, client.TopicSpec{Name: name, Partitions: 8, ReplicationFactor: rf, MinISR: min(rf, 2)})
		cancel()
		if err != nil {
			dc.t.Errorf("creating topic %d of %d: %v", i+1, n, err)
		}
	}
}

// TestDiskFullLeader: the partition leader's disk fills while acks=all
// writes go on.
func TestDiskFullLeader(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dc := startDiskFullCluster(t, ctx)
	pm, ctrl, err := dc.partition(ctx)
	if err != nil {
		t.Fatal(err)
	}
	victim := pm.Leader
	t.Logf("leader %d (epoch %d), controller %d: filling the leader's disk", pm.Leader, pm.LeaderEpoch, ctrl)
	stop := dc.producer(ctx)
	defer stop()
	dc.waitAcks(ctx, 500, 15*time.Second, "writes before the disk fills")
	dc.disks[victim].fill(t)
	start := time.Now()
	dc.waitAcks(ctx, 2000, 20*time.Second, "writes with the leader's disk full")
	t.Logf("writes resumed %v after the leader's disk filled", time.Since(start))
	pm2, _, _ := dc.partition(ctx)
	t.Logf("now leader %d epoch %d isr %v", pm2.Leader, pm2.LeaderEpoch, pm2.ISR)
	if pm2.Leader == victim || slices.Contains(pm2.ISR, victim) {
		t.Errorf("node %d, whose disk is full, still leads (%d) or is in the ISR %v", victim, pm2.Leader, pm2.ISR)
	}
	holdFull(ctx, 3*time.Second)
	dc.noCrashes()
	dc.disks[victim].free(t)
	dc.waitAcks(ctx, 500, 15*time.Second, "writes after space returned")
	stop()
	dc.waitInSync(ctx, 20*time.Second)
	dc.noCrashes()
	dc.checkReplicas()
	dc.logNotable(victim)
}

// TestDiskFullController: the active controller's disk fills, and metadata
// changes follow (its metadata log cannot append).
func TestDiskFullController(t *testing.T) { diskFullController(t, "ext4") }

// TestDiskFullControllerTmpfs: the same on tmpfs, where the restart on the
// full disk read holes of the metadata log's active segment through its
// mapping during recovery, and a read fault on a hole of a full tmpfs is
// SIGBUS (the node died with "fatal error: fault [signal SIGBUS]" in
// segment.scanBatches before recovery stopped at the first hole).
func TestDiskFullControllerTmpfs(t *testing.T) { diskFullController(t, "tmpfs") }

func diskFullController(t *testing.T, fsType string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dc := startDiskFullClusterOn(t, ctx, fsType)
	_, ctrl, err := dc.partition(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("filling the active controller's (node %d) disk", ctrl)
	stop := dc.producer(ctx)
	defer stop()
	dc.waitAcks(ctx, 500, 15*time.Second, "writes before the disk fills")
	dc.disks[ctrl].fill(t)
	// The first record needs a new block in the full node's metadata log.
	dc.createTopics(ctx, 5, 2)
	waitFor(ctx, t, 15*time.Second, "another active controller", func() (bool, string) {
		v, err := dc.c.Metadata(ctx)
		if err != nil {
			return false, err.Error()
		}
		return v.ControllerID > 0 && v.ControllerID != ctrl, fmt.Sprintf("controller %d", v.ControllerID)
	})
	dc.waitAcks(ctx, 1000, 20*time.Second, "writes with the controller's disk full")
	dc.requireLog(ctrl, "raftnode: disk full")
	// A restart on the full disk (a supervisor restarting it) must not
	// turn into a crash loop.
	if err := dc.c.Kill(ctrl); err != nil {
		t.Fatal(err)
	}
	if err := dc.c.StartNode(ctx, ctrl); err != nil {
		t.Fatal(err)
	}
	holdFull(ctx, 3*time.Second)
	dc.noCrashes()
	if !dc.c.Node(ctrl).Running {
		t.Fatalf("node %d restarted on its full disk exited: %v", ctrl, dc.c.Node(ctrl).LastExit)
	}
	dc.disks[ctrl].free(t)
	dc.waitAcks(ctx, 500, 15*time.Second, "writes after space returned")
	stop()
	dc.waitInSync(ctx, 20*time.Second)
	dc.createTopics(ctx, 1, 3) // all three brokers alive again
	dc.noCrashes()
	dc.checkReplicas()
	dc.logNotable(ctrl)
}

// requireLog fails the test unless node id's log has a line containing s
// (the scenario did reach the path it is about).
// requireLog fails the test unless node id logged one of the lines.
func (dc *dfCluster) requireLog(id int32, lines ...string) {
	dc.t.Helper()
	b, err := os.ReadFile(dc.c.Node(id).LogPath)
	if err != nil {
		dc.t.Fatal(err)
	}
	for _, s := range lines {
		if strings.Contains(string(b), s) {
			return
		}
	}
	dc.t.Errorf("node %d never logged %q", id, strings.Join(lines, `" or "`))
}

// follower picks partition pm's follower to fill: not the leader, and not
// the active controller ctrl if that can be helped (a full controller is
// TestDiskFullController's case).
func follower(pm wire.PartitionMetadata, ctrl int32) int32 {
	var victim int32 = -1
	for _, id := range pm.Replicas {
		if id != pm.Leader && (victim < 0 || id != ctrl) {
			victim = id
		}
	}
	return victim
}

// waitISR waits until node id is in partition 0's ISR (in) or out of it.
func (dc *dfCluster) waitISR(ctx context.Context, id int32, in bool, d time.Duration) {
	dc.t.Helper()
	what := fmt.Sprintf("node %d out of the ISR", id)
	if in {
		what = fmt.Sprintf("node %d back in the ISR", id)
	}
	waitFor(ctx, dc.t, d, what, func() (bool, string) {
		pm, _, err := dc.partition(ctx)
		if err != nil {
			return false, err.Error()
		}
		return slices.Contains(pm.ISR, id) == in, fmt.Sprintf("isr %v", pm.ISR)
	})
}
