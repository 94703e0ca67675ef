package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"paymentlog/client/clienttest"
)

// memberRun is a `consume --group` running in process until stopped.
type memberRun struct {
	out, errb lockedBuffer
	cancel    context.CancelFunc
	done      chan int // its exit status
}

// startMember starts `consume t --group g` with args and waits until it has
// joined (urfave/cli's flag parsing is not safe to run twice at once).
func startMember(t *testing.T, fc *clienttest.Cluster, args ...string) *memberRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &memberRun{cancel: cancel, done: make(chan int, 1)}
	args = append([]string{"paymentlog", "consume", "t", "--group", "g", "--json", "--max-wait", "20ms", "--bootstrap", fc.Bootstrap()}, args...)
	members := len(fc.GroupMembers("g"))
	go func() { r.done <- runWithInput(ctx, args, strings.NewReader(""), &r.out, &r.errb) }()
	t.Cleanup(func() { r.stop(t) })
	waitForCLI(t, "the new member joined", func() bool { return len(fc.GroupMembers("g")) > members })
	return r
}

// stop interrupts the run (as Ctrl-C does) and returns its exit status.
func (r *memberRun) stop(t *testing.T) int {
	t.Helper()
	r.cancel()
	select {
	case code := <-r.done:
		r.done <- code
		return code
	case <-time.After(30 * time.Second):
		t.Fatalf("consume --group still running 30 s after its interrupt; stderr %q", r.errb.String())
		return -1
	}
}

// membersSplit reports whether group g has n members that each own (and
// are assigned) the same number of partitions, every one of the topic's
// parts partitions once.
func membersSplit(fc *clienttest.Cluster, n, parts int) func() bool {
	return func() bool {
		ms := fc.GroupMembers("g")
		if len(ms) != n {
			return false
		}
		seen := map[int32]bool{}
		for _, m := range ms {
			if len(m.Assigned) != 1 || len(m.Owned) != 1 || !slices.Equal(m.Assigned[0].Partitions, m.Owned[0].Partitions) ||
				len(m.Assigned[0].Partitions) != parts/n {
				return false
			}
			for _, p := range m.Assigned[0].Partitions {
				seen[p] = true
			}
		}
		return len(seen) == parts
	}
}

// Two `consume --group g` runs share a 4-partition topic, 2 partitions
// each, and print every record once between them; group describe and list
// show them; deleting the group, setting its offsets and committing as no
// member (--partition) are refused while they run, with a clear message.
// Interrupted, they commit and leave. The first commits only when it
// releases partitions and at exit, the second every 50 ms.
func TestConsumeGroupMembersSplitPartitions(t *testing.T) {
	fc := startFakeCluster(t)
	fc.SetGroupTimeouts(time.Minute, 20*time.Millisecond)
	fc.CreateTopic("t", 4)
	bs := "--bootstrap=" + fc.Bootstrap()
	a := startMember(t, fc, "--commit-interval", "0")
	waitForCLI(t, "a member with the 4 partitions", membersSplit(fc, 1, 4))
	// Nothing committed yet: a consumer that is no member has the start
	// (--from beginning: 0) to commit.
	out, errOut, code := runClientCLI(t, nil, "consume", "t", "--group", "g", "--partition", "0", "--exit-at-end", bs)
	if code != 1 || out != "" || strings.Count(errOut, "\n") != 1 ||
		!strings.Contains(errOut, "commit offsets of group g: refused: the group has members") || !strings.Contains(errOut, "NonEmptyGroup") {
		t.Fatalf("consume --partition as no member: exit %d, stdout %q, stderr %q; want its commit refused", code, out, errOut)
	}
	b := startMember(t, fc, "--commit-interval", "50ms")
	waitForCLI(t, "two members with 2 partitions each", membersSplit(fc, 2, 4))
	for p := range 4 {
		var in strings.Builder
		for i := range 10 {
			fmt.Fprintf(&in, "p%d-%d\n", p, i)
		}
		if _, errOut, code := runClientCLI(t, strings.NewReader(in.String()), "produce", "t", "--partition", fmt.Sprint(p), bs); code != 0 {
			t.Fatalf("produce: %s", errOut)
		}
	}
	waitForCLI(t, "40 records printed, b's committed", func() bool {
		var committed int64
		for _, o := range fc.GroupOffsets("g") {
			committed += o.Offset
		}
		return strings.Count(a.out.String(), "\n")+strings.Count(b.out.String(), "\n") >= 40 && committed == 20
	})

	out, errOut, code = runClientCLI(t, nil, "group", "describe", "g", bs)
	_, members, _ := strings.Cut(out, "\n\n")
	if code != 0 || !strings.HasPrefix(out, "TOPIC ") || !strings.HasPrefix(members, "MEMBER ") || !strings.Contains(members, "ASSIGNED") ||
		strings.Count(members, " t:") != 2 || strings.Count(members, " ago\n") != 2 {
		t.Fatalf("group describe: exit %d, stdout %q, stderr %q; want a members section of 2", code, out, errOut)
	}
	d := describeGroupJSON(t, fc, "g")
	if len(d.Members) != 2 || d.Members[0].MemberID == d.Members[1].MemberID || d.Members[0].ClientID == "" ||
		len(d.Members[0].Assigned) != 1 || len(d.Members[0].Assigned[0].Partitions) != 2 || d.Members[0].LastHeartbeatMs <= 0 {
		t.Fatalf("group describe --json members: %+v", d.Members)
	}
	out, errOut, code = runClientCLI(t, nil, "group", "list", bs)
	if lines := strings.Split(out, "\n"); code != 0 || lines[0] != "GROUP  MEMBERS  PARTITIONS  LAST COMMIT" ||
		!strings.HasPrefix(lines[1], "g      2        2           20") {
		t.Fatalf("group list: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	_, errOut, code = runClientCLI(t, nil, "group", "delete", "g", bs)
	oneErrorLine(t, "delete with members", code, errOut, 1, "delete group g: refused: the group has members")
	_, errOut, code = runClientCLI(t, nil, "group", "set-offsets", "g", "t", "--to", "earliest", "--execute", bs)
	oneErrorLine(t, "set-offsets with members", code, errOut, 1, "set offsets of group g: refused: the group has members")

	if ca, cb := a.stop(t), b.stop(t); ca != 0 || cb != 0 {
		t.Fatalf("exit %d and %d after the interrupt; stderr %q and %q", ca, cb, a.errb.String(), b.errb.String())
	}
	ra, rb := parseConsumed(t, a.out.String()), parseConsumed(t, b.out.String())
	partsOf := func(ls []consumedLine) []int32 {
		var ps []int32
		for _, l := range ls {
			if !slices.Contains(ps, l.Partition) {
				ps = append(ps, l.Partition)
			}
		}
		slices.Sort(ps)
		return ps
	}
	pa, pb := partsOf(ra), partsOf(rb)
	if len(pa) != 2 || len(pb) != 2 || slices.ContainsFunc(pa, func(p int32) bool { return slices.Contains(pb, p) }) {
		t.Fatalf("a printed partitions %v, b %v; want 2 each, none shared", pa, pb)
	}
	checkOnce(t, 40, ra, rb)
	if ms := fc.GroupMembers("g"); len(ms) != 0 {
		t.Fatalf("members after both stopped: %+v", ms)
	}
	for _, o := range fc.GroupOffsets("g") {
		if o.Offset != 10 {
			t.Fatalf("committed %+v; want 10 on every partition", fc.GroupOffsets("g"))
		}
	}
	if got := consumeLines(t, fc, "--group", "g", "--exit-at-end"); len(got) != 0 {
		t.Fatalf("a member after both printed %+v", got)
	}
}

// A member that leaves hands its partitions to the one still running,
// which prints their records from its commit on: none twice, none skipped.
func TestConsumeGroupMemberTakesOverALeaversPartitions(t *testing.T) {
	fc := startFakeCluster(t)
	fc.SetGroupTimeouts(time.Minute, 20*time.Millisecond)
	fc.CreateTopic("t", 4)
	bs := "--bootstrap=" + fc.Bootstrap()
	produce := func(round int) {
		for p := range 4 {
			in := fmt.Sprintf("p%d-%d\np%d-%d\n", p, 2*round, p, 2*round+1)
			if _, errOut, code := runClientCLI(t, strings.NewReader(in), "produce", "t", "--partition", fmt.Sprint(p), bs); code != 0 {
				t.Fatalf("produce: %s", errOut)
			}
		}
	}
	a := startMember(t, fc)
	b := startMember(t, fc)
	waitForCLI(t, "two members with 2 partitions each", membersSplit(fc, 2, 4))
	produce(0)
	waitForCLI(t, "8 records printed", func() bool {
		return strings.Count(a.out.String(), "\n")+strings.Count(b.out.String(), "\n") == 8
	})
	if code := b.stop(t); code != 0 {
		t.Fatalf("b: exit %d, stderr %q", code, b.errb.String())
	}
	waitForCLI(t, "a alone with the 4 partitions", membersSplit(fc, 1, 4))
	produce(1)
	waitForCLI(t, "16 records printed", func() bool {
		return strings.Count(a.out.String(), "\n")+strings.Count(b.out.String(), "\n") >= 16
	})
	if code := a.stop(t); code != 0 {
		t.Fatalf("a: exit %d, stderr %q", code, a.errb.String())
	}
	checkOnce(t, 16, parseConsumed(t, b.out.String()), parseConsumed(t, a.out.String()))
}
