package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/internal/freeport"
	"paymentlog/node"
	"paymentlog/wire"
)

// TestMirrorSurvivesSIGKILL holds the README's at-least-once claim for the
// real process: a `paymentlog mirror` copying a topic while a producer
// writes to it is killed with SIGKILL mid-stream, right after a commit (a
// commit that counted records the target had not acknowledged would leave
// a gap); a second is killed with records acknowledged past its last
// commit in every partition (so they are repeated); a third finishes. The
// target then holds every source record, each a copy of it, each
// partition in source order but for the repeats, which start at or after
// the group's commit at the kill before them (source offsets 0..k1-1, then
// c1..k2-1, then c2..end-1, with commit_i <= c_i <= k_i). The offset syncs
// written across the kills then translate a source group's offsets
// (mirror translate-offsets, the binary) to target offsets from which no
// record it had not consumed is missing.
func TestMirrorSurvivesSIGKILL(t *testing.T) {
	src, dst := startMirrorNode(t), startMirrorNode(t)
	srcC, dstC := mirrorClient(t, src), mirrorClient(t, dst)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const parts, backlog, load, topic = 3, 8000, 22000, "pay" // records per partition
	if _, err := srcC.Admin().CreateTopic(ctx, client.TopicSpec{Name: topic, Partitions: parts, ReplicationFactor: 1, MinISR: 1}); err != nil {
		t.Fatal(err)
	}
	var appOffs []wire.GroupOffset // a consumer group of the source, for the translation at the end
	for p := range int32(parts) {
		appOffs = append(appOffs, wire.GroupOffset{Topic: topic, Partition: p, Offset: 1000 + 3000*int64(p), LeaderEpoch: -1})
	}
	if err := srcC.Admin().CommitOffsets(ctx, "app", appOffs); err != nil {
		t.Fatal(err)
	}

	// A backlog, then the load: 1000 records every 100 ms, 6.6 s of it.
	// The mirror copies as fast as it can, with records in its producer's
	// buffer at every commit.
	if err := produceLoad(ctx, srcC, topic, parts, backlog, 0, 0); err != nil {
		t.Fatal(err)
	}
	produced := make(chan error, 1)
	go func() { produced <- produceLoad(ctx, srcC, topic, parts, load, backlog, 100*time.Millisecond) }()

	mirrorArgs := []string{"mirror", "--source-bootstrap", src, "--bootstrap", dst, "--topics", topic, "--commit-interval", "100ms"}
	group := func() map[int32]int64 { return committed(t, srcC, "paymentlog-mirror", topic) }
	kill := func(m *process, what string) map[int32]int64 {
		t.Helper()
		if err := m.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-m.done
		at := group()
		select {
		case err := <-produced:
			t.Fatalf("the producer had finished (%v) before the %s kill: not mid-stream", err, what)
		default:
		}
		t.Logf("killed the %s mirror with %d records on the target, committed %v; its stderr:\n%s", what, sum(endOffsets(t, dstC, topic)), at, m.stderr())
		return at
	}

	first := startProcess(t, mirrorArgs...)
	waitUntil(t, 30*time.Second, "the first mirror to copy 6000 records and commit", func() bool {
		return sum(endOffsets(t, dstC, topic)) >= 6000 && sum(group()) > 0
	})
	last := sum(group())
	waitUntil(t, 10*time.Second, "the first mirror's next commit", func() bool { return sum(group()) != last })
	atKill1 := kill(first, "first")

	ends1 := endOffsets(t, dstC, topic)
	// The second commits once a second, not every 100 ms: records past its
	// last commit, once there, stay so until the kill. (With 100 ms a
	// commit could land between the wait below and the kill, under load:
	// a CI run killed it with nothing past its commit, and no record was
	// repeated.)
	secondArgs := slices.Clone(mirrorArgs)
	secondArgs[len(secondArgs)-1] = "1s" // --commit-interval
	second := startProcess(t, secondArgs...)
	// Records acknowledged past the last commit: on the target past what
	// the first left, less what the second resumed at, more than the
	// second committed since.
	waitUntil(t, 30*time.Second, "the second mirror to have 100 records of every partition acknowledged past its last commit", func() bool {
		ends, c := endOffsets(t, dstC, topic), group()
		for p := range int32(parts) {
			if ends[p]-ends1[p]+atKill1[p]-c[p] < 100 {
				return false
			}
		}
		return true
	})
	atKill2 := kill(second, "second")

	third := startProcess(t, mirrorArgs...)
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	srcEnds := endOffsets(t, srcC, topic)
	waitUntil(t, 40*time.Second, "the third mirror to commit every record", func() bool {
		c := committed(t, srcC, "paymentlog-mirror", topic)
		for p, end := range srcEnds {
			if c[p] != end {
				return false
			}
		}
		return true
	})
	if err := third.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-third.done; err != nil {
		t.Fatalf("third mirror after SIGTERM: %v; stderr:\n%s", err, third.stderr())
	}

	source, target := readAll(t, srcC, topic, parts), readAll(t, dstC, topic, parts)
	repeats := 0
	for p := range int32(parts) {
		offs := make([]int64, len(target[p]))
		for i, m := range target[p] {
			offs[i] = headerOffset(t, topic, p, m)
			if offs[i] >= int64(len(source[p])) {
				t.Fatalf("%s/%d target offset %d names source offset %d; the source has %d", topic, p, m.Offset, offs[i], len(source[p]))
			}
			if s := source[p][offs[i]]; string(m.Value) != string(s.Value) || string(m.Key) != string(s.Key) {
				t.Fatalf("%s/%d target offset %d: %q=%q; source offset %d is %q=%q", topic, p, m.Offset, m.Key, m.Value, offs[i], s.Key, s.Value)
			}
		}
		repeats += checkResumed(t, p, offs, []int64{atKill1[p], atKill2[p]}, int64(len(source[p])))
	}
	t.Logf("%d records on the target, %d of them repeats after the kills", len(target[0])+len(target[1])+len(target[2]), repeats)

	out, err := exec.CommandContext(ctx, binary, "mirror", "translate-offsets", "app", "--execute", "--source-bootstrap", src, "--bootstrap", dst).CombinedOutput()
	if err != nil {
		t.Fatalf("translate-offsets: %v\n%s", err, out)
	}
	translated := committed(t, dstC, "app", topic)
	for _, o := range appOffs {
		at, ok := translated[o.Partition]
		if !ok {
			t.Fatalf("translate-offsets committed %v; nothing for partition %d\n%s", translated, o.Partition, out)
		}
		read := map[int64]bool{}
		for _, m := range target[o.Partition] {
			if m.Offset >= at {
				read[headerOffset(t, topic, o.Partition, m)] = true
			}
		}
		for s := o.Offset; s < int64(len(source[o.Partition])); s++ {
			if !read[s] {
				t.Fatalf("group app's source offset %d of partition %d translated to target offset %d, after which source offset %d is missing\n%s",
					o.Offset, o.Partition, at, s, out)
			}
		}
	}
	t.Logf("translate-offsets:\n%s", out)
}

// checkResumed checks a target partition's source offsets after kills
// whose last commits were commits: runs of consecutive offsets, the first
// from 0, the last to end-1, each later run starting at c with
// commit <= c <= one past the run before, where the commit is that of the
// kill the run follows. The runs are matched to the last kills: the last
// kill must show (records acknowledged past its commit), an earlier one
// shows only if it repeated something. It returns the repeats.
func checkResumed(t *testing.T, p int32, offs []int64, commits []int64, end int64) int {
	t.Helper()
	type run struct{ from, to int64 } // to: one past the last
	var rs []run
	for i := 0; i < len(offs); {
		j := i
		for j+1 < len(offs) && offs[j+1] == offs[j]+1 {
			j++
		}
		rs = append(rs, run{offs[i], offs[j] + 1})
		i = j + 1
	}
	bad := len(rs) < 2 || len(rs) > len(commits)+1 || rs[0].from != 0 || rs[len(rs)-1].to != end
	repeats := 0
	for r := 1; r < len(rs) && !bad; r++ {
		commit := commits[len(commits)-(len(rs)-r)]
		bad = rs[r].from < commit || rs[r].from > rs[r-1].to
		repeats += int(rs[r-1].to - rs[r].from)
	}
	if bad {
		t.Fatalf("partition %d: the target holds source offsets %s; want runs from 0 to %d, each restart at or after the commit at the kill before it (%v) and at or before the end of the run before",
			p, runs(offs), end-1, commits)
	}
	return repeats
}

func offsetRange(from, to int64) []int64 {
	var out []int64
	for o := from; o < to; o++ {
		out = append(out, o)
	}
	return out
}

// runs writes offs as runs, "0-99 50-199", for messages.
func runs(offs []int64) string {
	var b strings.Builder
	for i := 0; i < len(offs); {
		j := i
		for j+1 < len(offs) && offs[j+1] == offs[j]+1 {
			j++
		}
		fmt.Fprintf(&b, "%d-%d ", offs[i], offs[j])
		i = j + 1
	}
	return b.String()
}

// headerOffset is the source offset m's mirror header names.
func headerOffset(t *testing.T, topic string, p int32, m client.Message) int64 {
	t.Helper()
	prefix := fmt.Sprintf("%s/%d/", topic, p)
	for _, h := range m.Headers {
		if h.Key == "paymentlog.mirror.source" && strings.HasPrefix(string(h.Value), prefix) {
			if o, err := strconv.ParseInt(strings.TrimPrefix(string(h.Value), prefix), 10, 64); err == nil {
				return o
			}
		}
	}
	t.Fatalf("%s/%d offset %d: no mirror header naming it (headers %q)", topic, p, m.Offset, m.Headers)
	return 0
}

// startMirrorNode runs a one-node cluster in process on 127.0.0.1, with a
// short group session (a killed mirror's partitions are free within 2 s),
// and returns its address.
func startMirrorNode(t *testing.T) string {
	t.Helper()
	addr := freeport.UDPAddr(t)
	cfg := node.DefaultConfig()
	cfg.ID, cfg.Addr, cfg.DataDir = 1, addr, t.TempDir()
	cfg.Controllers = map[int32]string{1: addr}
	cfg.NoRaftSync = true
	cfg.GroupSessionTimeout, cfg.GroupHeartbeatInterval = 2*time.Second, 200*time.Millisecond
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	nd, err := node.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nd.Kill)
	waitUntil(t, 30*time.Second, "the node to register", func() bool { return len(nd.Store().Image().UnfencedBrokers()) == 1 })
	return addr
}

func mirrorClient(t *testing.T, bs string) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := client.New(ctx, client.Config{Bootstrap: []string{bs}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = c.Close(ctx)
	})
	return c
}

// produceLoad writes perPart records to each partition of topic, in
// rounds of 1000 every gap (0: at once): key "k<p>-<i>", value "v<p>-<i>"
// and 1 KiB of padding, i from first.
func produceLoad(ctx context.Context, c *client.Client, topic string, parts int32, perPart, first int, gap time.Duration) error {
	prod, err := c.NewProducer(client.ProducerConfig{Acks: client.AcksAll})
	if err != nil {
		return err
	}
	defer prod.Close(context.WithoutCancel(ctx))
	var mu sync.Mutex
	var failed error
	var tick <-chan time.Time
	if gap > 0 {
		tk := time.NewTicker(gap)
		defer tk.Stop()
		tick = tk.C
	}
	pad := bytes.Repeat([]byte{'.'}, 1024)
	seq := map[int32]int{}
	for p := range parts {
		seq[p] = first
	}
	for i := 0; i < perPart*int(parts); {
		for n := 0; n < 1000 && i < perPart*int(parts); n, i = n+1, i+1 {
			p := int32(i % int(parts))
			rec := &client.Record{Topic: topic, Partition: p, PartitionSet: true,
				Key: fmt.Appendf(nil, "k%d-%d", p, seq[p]), Value: fmt.Appendf(nil, "v%d-%d%s", p, seq[p], pad)}
			seq[p]++
			if err := prod.Produce(ctx, rec, func(d client.Delivery) {
				if d.Err != nil {
					mu.Lock()
					failed = d.Err
					mu.Unlock()
				}
			}); err != nil {
				return err
			}
		}
		if tick == nil {
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick:
		}
	}
	if err := prod.Flush(ctx); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	return failed
}

// process is a paymentlog process the test started.
type process struct {
	cmd  *exec.Cmd
	done chan error // its exit, once
	mu   sync.Mutex
	errb bytes.Buffer
}

func (p *process) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.errb.Write(b)
}

func (p *process) stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.errb.String()
}

// startProcess runs the binary with args; the test's cleanup kills it.
func startProcess(t *testing.T, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(binary, args...), done: make(chan error, 1)}
	p.cmd.Stderr = p
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { p.done <- p.cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); <-exited })
	return p
}

// waitUntil polls cond every 5 ms until it holds, failing the test after d.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
	}
}

func endOffsets(t *testing.T, c *client.Client, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	offs, err := c.Admin().ListOffsets(ctx, topic, client.SeekEnd)
	if err != nil {
		if client.ErrorCode(err) == wire.UnknownTopicOrPartition {
			return nil // not created on the target yet
		}
		t.Fatal(err)
	}
	return offs
}

func committed(t *testing.T, c *client.Client, group, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	offs, err := c.Admin().FetchOffsets(ctx, group, topic)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	for _, o := range offs {
		out[o.Partition] = o.Offset
	}
	return out
}

func sum(m map[int32]int64) int64 {
	var s int64
	for _, v := range m {
		s += v
	}
	return s
}

// readAll reads every record of topic's partitions up to their ends.
func readAll(t *testing.T, c *client.Client, topic string, parts int32) map[int32][]client.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var tps []client.TopicPartition
	for p := range parts {
		tps = append(tps, client.TopicPartition{Topic: topic, Partition: p})
	}
	cons := c.NewConsumer(client.ConsumerConfig{MaxWait: 20 * time.Millisecond})
	defer cons.Close()
	cons.Assign(tps, client.SeekBeginning)
	ends, err := cons.EndOffsets(ctx, tps)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32][]client.Message{}
	for {
		done := true
		for _, tp := range tps {
			if pos, _ := cons.Position(tp); pos < ends[tp] {
				done = false
			}
		}
		if done {
			return out
		}
		msgs, err := cons.Poll(ctx)
		if err != nil {
			t.Fatalf("read %s: %v", topic, err)
		}
		for _, m := range msgs {
			out[m.Partition] = append(out[m.Partition], m)
		}
	}
}
