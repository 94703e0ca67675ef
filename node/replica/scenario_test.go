package replica_test

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"paymentlog/node/replica"
)

var rewrite = flag.Bool("rewrite", false, "rewrite scenario expectations in testdata/*.txt")

// TestScenarios runs every testdata/*.txt script. A script is a list of
// blocks:
//
//	# comments
//	command key=value ...
//	----
//	expected output
//	<blank line>
//
// Any command may carry at=DURATION to move the clock first. Commands (see
// sim.run): init, elect, deliver, produce, fetch, tick, alter, sync,
// crash, restart, state, check. Run with -rewrite to regenerate outputs.
func TestScenarios(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no scenarios")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) { runScript(t, f) })
	}
}

type block struct {
	pre      []string // comments and blank lines before the command
	cmd      string
	expected string
}

func parseScript(t *testing.T, path string) []block {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []block
	var cur block
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	state := 0 // 0: before command, 1: after "----"
	var out []string
	for sc.Scan() {
		line := sc.Text()
		switch state {
		case 0:
			if line == "" || strings.HasPrefix(line, "#") {
				cur.pre = append(cur.pre, line)
				continue
			}
			if line == "----" {
				state = 1
				out = nil
				continue
			}
			if cur.cmd != "" {
				t.Fatalf("%s: two commands without ----: %q", path, line)
			}
			cur.cmd = line
		case 1:
			if line == "" {
				cur.expected = strings.Join(out, "\n")
				blocks = append(blocks, cur)
				cur, state = block{}, 0
				continue
			}
			out = append(out, line)
		}
	}
	if state == 1 {
		cur.expected = strings.Join(out, "\n")
		blocks = append(blocks, cur)
	} else if cur.cmd != "" {
		t.Fatalf("%s: command %q without ----", path, cur.cmd)
	}
	return blocks
}

func runScript(t *testing.T, path string) {
	blocks := parseScript(t, path)
	s := &sim{t: t}
	var rewritten strings.Builder
	for _, b := range blocks {
		got := strings.TrimRight(s.run(b.cmd), "\n")
		for _, p := range b.pre {
			rewritten.WriteString(p + "\n")
		}
		fmt.Fprintf(&rewritten, "%s\n----\n", b.cmd)
		if got != "" {
			rewritten.WriteString(got + "\n")
		}
		rewritten.WriteString("\n")
		if !*rewrite && got != b.expected {
			t.Errorf("%s: %s\n--- got:\n%s\n--- want:\n%s", path, b.cmd, got, b.expected)
		}
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(strings.TrimRight(rewritten.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// sim is a partition on several brokers plus a fake controller, all in memory.
type sim struct {
	t     *testing.T
	now   time.Time
	nodes map[int32]*simNode
	meta  replica.State // the controller's committed state
	lag   time.Duration
	acked map[string]ackedRec // produce id -> what was acknowledged
	reqs  map[uint64]pendingReq
	nreq  uint64
	// track (init durable=track) runs the replicas with TrackDurable: a
	// leader's appends are durable only after a sync command, and a crash
	// may lose what is not.
	track bool
	// visible holds every record a leader has exposed below its HW (what
	// consumers may have read), by offset: check verifies no offset is
	// ever exposed with another record.
	visible map[int64]entry
}

type simNode struct {
	id   int32
	log  memLog
	r    *replica.Replica
	down bool
	// inc is the node's incarnation, registered with the controller at
	// start: 1, bumped by every restart.
	inc int64
	// synced is the end of the log's durable prefix: everything a follower
	// copies (it reports only durable ends), a leader's appends only after
	// sync (with track; at once otherwise).
	synced int64
}

type pendingReq struct {
	name string
	node int32
	base int64
	vals []string
}

type ackedRec struct {
	base int64
	vals []string
}

func (s *sim) run(line string) string {
	f := strings.Fields(line)
	cmd, args := f[0], map[string]string{}
	for _, a := range f[1:] {
		k, v, _ := strings.Cut(a, "=")
		args[k] = v
	}
	var out strings.Builder
	if v, ok := args["at"]; ok { // any command may move the clock first
		s.now = time.Unix(0, 0).Add(dur(s.t, v, 0))
	}
	switch cmd {
	case "init":
		s.now = time.Unix(0, 0)
		s.lag = dur(s.t, args["lag"], 10*time.Second)
		s.nodes = map[int32]*simNode{}
		s.acked = map[string]ackedRec{}
		s.reqs = map[uint64]pendingReq{}
		s.visible = map[int64]entry{}
		s.track = args["durable"] == "track"
		reps := ids(args["replicas"])
		s.meta = replica.State{Leader: -1, LeaderEpoch: 0, PartitionEpoch: 0, Replicas: reps, ISR: reps,
			MinISR: int32(num(args["minisr"], 1))}
		for _, id := range reps {
			n := &simNode{id: id, inc: 1}
			n.r = replica.New(replica.Config{ID: id, LagTime: s.lag, TrackDurable: s.track}, 0, 0, 0)
			s.nodes[id] = n
		}
	case "elect": // elect leader=N [isr=..] [to=..]: a new leader epoch
		s.meta.Leader = int32(num(args["leader"], -1))
		s.meta.LeaderEpoch++
		s.meta.PartitionEpoch++
		if v, ok := args["isr"]; ok {
			s.meta.ISR = ids(v)
		}
		s.deliver(&out, args)
	case "isr": // isr isr=.. [to=..]: the controller changes the ISR (e.g. fencing a broker)
		s.meta.ISR = ids(args["isr"])
		s.meta.PartitionEpoch++
		s.deliver(&out, args)
	case "deliver":
		s.deliver(&out, args)
	case "produce": // produce node=N id=NAME vals=a,b [acks=all|1] [epoch=E] [timeout=5s]
		s.produce(&out, args)
	case "fetch": // fetch node=N [rounds=K]: a follower fetches from the leader it knows
		for range num(args["rounds"], 1) {
			s.fetch(&out, s.node(args["node"]))
		}
	case "tick": // tick node=N [at=DURATION]
		n := s.node(args["node"])
		s.decide(&out, n, n.r.Tick(s.now))
	case "alter": // alter node=N [reject]: the controller handles N's pending proposal
		s.alter(&out, s.node(args["node"]), args)
	case "sync": // sync node=N: the node's log is durable to its end
		n := s.node(args["node"])
		n.synced = n.log.leo()
		fmt.Fprintf(&out, "%d: synced to %d\n", n.id, n.synced)
		if n.r.Role() == replica.RoleLeader {
			s.decide(&out, n, n.r.LocalDurable(n.r.LeaderEpoch(), n.synced))
		}
	case "crash": // crash node=N [keep=K]: the node dies keeping K log entries (unsynced tail lost)
		n := s.node(args["node"])
		n.down = true
		if v, ok := args["keep"]; ok {
			keep := int64(num(v, 0))
			if s.track && keep < n.synced {
				s.t.Fatalf("crash of %d keeps %d entries, below its durable end %d", n.id, keep, n.synced)
			}
			n.log.truncateTo(keep)
		}
		n.synced = min(n.synced, n.log.leo())
		for id, q := range s.reqs {
			if q.node == n.id {
				delete(s.reqs, id)
			}
		}
		fmt.Fprintf(&out, "%d: down log=%s\n", n.id, n.log.String())
	case "restart": // restart node=N [hw=H]: reopen with the checkpointed HW
		n := s.node(args["node"])
		hw := int64(num(args["hw"], int(n.r.HW())))
		n.down = false
		n.inc++
		n.synced = n.log.leo()
		n.r = replica.New(replica.Config{ID: n.id, LagTime: s.lag, TrackDurable: s.track}, n.log.start, n.log.leo(), hw)
		fmt.Fprintf(&out, "%d: %s\n", n.id, n.r)
	case "state":
		for _, id := range s.sortedIDs() {
			n := s.nodes[id]
			down := ""
			if n.down {
				down = " (down)"
			}
			fmt.Fprintf(&out, "%d%s: %s log=%s\n", id, down, n.r, n.log.String())
		}
	case "check":
		s.check(&out)
	default:
		s.t.Fatalf("unknown command %q", cmd)
	}
	return out.String()
}

func (s *sim) node(v string) *simNode {
	n := s.nodes[int32(num(v, -1))]
	if n == nil {
		s.t.Fatalf("no node %q", v)
	}
	return n
}

func (s *sim) sortedIDs() []int32 {
	var out []int32
	for id := range s.nodes {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

func (s *sim) deliver(out *strings.Builder, args map[string]string) {
	targets := s.sortedIDs()
	if v, ok := args["to"]; ok {
		targets = ids(v)
	}
	for _, id := range targets {
		n := s.nodes[id]
		if n.down {
			continue
		}
		tr, d := n.r.Apply(s.meta, n.log.leo(), s.now)
		fmt.Fprintf(out, "%d: %s -> %s\n", id, transitionName(tr), n.r)
		s.decide(out, n, d)
	}
}

func transitionName(t replica.Transition) string {
	return [...]string{"unchanged", "updated", "leader", "follower", "stopped", "stale"}[t]
}

func (s *sim) produce(out *strings.Builder, args map[string]string) {
	n := s.node(args["node"])
	acksAll := args["acks"] != "1"
	epoch := int32(num(args["epoch"], -1))
	if c := n.r.CheckProduce(epoch, acksAll); c != replica.OK {
		fmt.Fprintf(out, "%s: refused %s\n", args["id"], c)
		return
	}
	vals := strings.Split(args["vals"], ",")
	base := n.log.leo()
	for _, v := range vals {
		n.log.entries = append(n.log.entries, entry{epoch: n.r.LeaderEpoch(), val: v})
	}
	fmt.Fprintf(out, "%s: appended at %d\n", args["id"], base)
	s.decide(out, n, n.r.LocalAppend(n.log.leo()))
	if !s.track {
		n.synced = n.log.leo()
	}
	if !acksAll {
		fmt.Fprintf(out, "%s: acked (acks=1, not checked)\n", args["id"])
		return
	}
	s.nreq++
	s.reqs[s.nreq] = pendingReq{name: args["id"], node: n.id, base: base, vals: vals}
	deadline := s.now.Add(dur(s.t, args["timeout"], 30*time.Second))
	s.decide(out, n, n.r.ParkProduce(s.nreq, n.r.LeaderEpoch(), n.log.leo(), deadline))
}

func (s *sim) fetch(out *strings.Builder, f *simNode) {
	if f.down || f.r.Role() != replica.RoleFollower {
		fmt.Fprintf(out, "%d: not fetching (%s)\n", f.id, f.r.Role())
		return
	}
	l := s.nodes[f.r.Leader()]
	if l == nil || l.down {
		fmt.Fprintf(out, "%d: leader %d unreachable\n", f.id, f.r.Leader())
		return
	}
	req := replica.Fetch{ReplicaID: f.id, Incarnation: f.inc, FetchOffset: f.log.leo(),
		LastFetchedEpoch: f.log.latestEpoch(), CurrentLeaderEpoch: f.r.LeaderEpoch()}
	chk, d := l.r.FollowerFetch(&l.log, req, s.now)
	switch {
	case chk.Code != replica.OK:
		fmt.Fprintf(out, "%d: fetch from %d at %d: %s\n", f.id, l.id, req.FetchOffset, chk.Code)
		return
	case chk.Diverged():
		off, fully := replica.TruncationOffset(&f.log, f.log.start, f.log.leo(), chk.DivergingEpoch, chk.DivergingEndOffset)
		if fully {
			f.log = memLog{start: off}
		} else {
			f.log.truncateTo(off)
		}
		f.synced = min(f.synced, f.log.leo())
		f.r.Truncated(f.log.start, f.log.leo())
		fmt.Fprintf(out, "%d: diverging epoch=%d end=%d: truncated to %d log=%s\n", f.id,
			chk.DivergingEpoch, chk.DivergingEndOffset, f.log.leo(), f.log.String())
		return
	}
	s.decide(out, l, d)
	copied := 0
	for off := req.FetchOffset; off < l.log.leo(); off++ {
		e, _ := l.log.at(off)
		f.log.entries = append(f.log.entries, e)
		copied++
	}
	f.synced = f.log.leo() // a follower flushes before it reports its log end
	f.r.LocalAppend(f.log.leo())
	f.r.FollowerHW(l.r.HW())
	fmt.Fprintf(out, "%d: fetched %d from %d at %d: hw=%d leo=%d\n", f.id, copied, l.id, req.FetchOffset, f.r.HW(), f.r.LEO())
}

func (s *sim) alter(out *strings.Builder, n *simNode, args map[string]string) {
	prop := n.r.PendingISR()
	if prop == nil {
		fmt.Fprintf(out, "%d: nothing pending\n", n.id)
		return
	}
	_, reject := args["reject"]
	if reject || n.r.LeaderEpoch() != s.meta.LeaderEpoch || n.r.PartitionEpoch() != s.meta.PartitionEpoch {
		d := n.r.ProposalFailed()
		fmt.Fprintf(out, "controller: refused %v from %d (epoch %d/%d, controller at %d/%d)\n", prop, n.id,
			n.r.LeaderEpoch(), n.r.PartitionEpoch(), s.meta.LeaderEpoch, s.meta.PartitionEpoch)
		s.decide(out, n, d)
		return
	}
	if why := s.ineligible(n.r.PendingMembers()); why != "" {
		d := n.r.ProposalFailed()
		fmt.Fprintf(out, "controller: refused %v from %d: %s\n", prop, n.id, why)
		s.decide(out, n, d)
		return
	}
	s.meta.ISR = prop
	s.meta.PartitionEpoch++
	fmt.Fprintf(out, "controller: isr=%v pepoch=%d\n", prop, s.meta.PartitionEpoch)
	s.decide(out, n, n.r.ISRCommitted(prop, s.meta.PartitionEpoch, s.now))
	fmt.Fprintf(out, "%d: %s\n", n.id, n.r)
}

// ineligible is the controller's check of the members an ISR change adds
// (metadata.DecideAlterPartition): a down node is fenced, and the leader must
// have judged each on the fetches of its current incarnation (KIP-903).
func (s *sim) ineligible(members []replica.Member) string {
	for _, m := range members {
		if slices.Contains(s.meta.ISR, m.ID) {
			continue
		}
		switch n := s.nodes[m.ID]; {
		case n.down:
			return fmt.Sprintf("replica %d is fenced", m.ID)
		case m.Incarnation != n.inc:
			return fmt.Sprintf("replica %d judged on incarnation %d, registered %d", m.ID, m.Incarnation, n.inc)
		}
	}
	return ""
}

// decide prints a node's decisions and carries them out.
func (s *sim) decide(out *strings.Builder, n *simNode, d replica.Decisions) {
	if d.HWChanged {
		fmt.Fprintf(out, "%d: hw -> %d\n", n.id, d.HW)
	}
	for _, c := range d.Complete {
		q, ok := s.reqs[c.ReqID]
		if !ok {
			s.t.Fatalf("completion of unknown request %d", c.ReqID)
		}
		delete(s.reqs, c.ReqID)
		if c.Code == replica.OK {
			s.acked[q.name] = ackedRec{q.base, q.vals}
			fmt.Fprintf(out, "%s: acked at %d\n", q.name, q.base)
		} else {
			fmt.Fprintf(out, "%s: failed %s\n", q.name, c.Code)
		}
	}
	if d.ProposeISR != nil {
		fmt.Fprintf(out, "%d: propose isr=%v\n", n.id, d.ProposeISR)
	}
}

// check verifies the promise: every acknowledged acks=all record is at its
// offset in every live ISR member's log, and any two logs agree below the
// smaller of their HWs.
func (s *sim) check(out *strings.Builder) {
	bad := 0
	names := make([]string, 0, len(s.acked))
	for k := range s.acked {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		a := s.acked[name]
		for _, id := range s.meta.ISR {
			n := s.nodes[id]
			if n.down {
				continue
			}
			for i, v := range a.vals {
				if e, ok := n.log.at(a.base + int64(i)); !ok || e.val != v {
					fmt.Fprintf(out, "LOST: %s value %s at %d missing on %d (log=%s)\n", name, v, a.base+int64(i), id, n.log.String())
					bad++
				}
			}
		}
	}
	// What leaders expose below their HW stays: an offset a consumer has
	// read never holds another record.
	for _, id := range s.sortedIDs() {
		n := s.nodes[id]
		if n.down || n.r.Role() != replica.RoleLeader {
			continue
		}
		for off := n.log.start; off < min(n.r.HW(), n.log.leo()); off++ {
			e, _ := n.log.at(off)
			if v, ok := s.visible[off]; ok && v != e {
				fmt.Fprintf(out, "CHANGED: offset %d was visible as %s@%d, leader %d exposes %s@%d (log=%s)\n",
					off, v.val, v.epoch, id, e.val, e.epoch, n.log.String())
				bad++
				continue
			}
			s.visible[off] = e
		}
	}
	ids := s.sortedIDs()
	for i, a := range ids {
		for _, b := range ids[i+1:] {
			na, nb := s.nodes[a], s.nodes[b]
			// A node that crashed losing its log's tail restarts with its
			// HW clamped to what is left; until then its replica's HW is
			// that of the dead process.
			lim := min(na.r.HW(), na.log.leo(), nb.r.HW(), nb.log.leo())
			for off := max(na.log.start, nb.log.start); off < lim; off++ {
				ea, _ := na.log.at(off)
				eb, _ := nb.log.at(off)
				if ea != eb {
					fmt.Fprintf(out, "DIVERGED: %d and %d differ at %d below hw %d\n", a, b, off, lim)
					bad++
				}
			}
		}
	}
	if bad == 0 {
		out.WriteString("ok\n")
	}
}

func ids(v string) []int32 {
	out := []int32{}
	if v == "" {
		return out
	}
	for _, p := range strings.Split(v, ",") {
		out = append(out, int32(num(p, -1)))
	}
	return out
}

func num(v string, def int) int {
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		panic(err)
	}
	return n
}

func dur(t *testing.T, v string, def time.Duration) time.Duration {
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
