package cli

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"paymentlog/client"
)

// topic reassign against real nodes: --replace moves a partition from one
// broker to the other and waits for it (flags before or after the name),
// --replicas moves it back, --drain moves it away again,
// --replication-factor adds a replica and takes it away; records written
// before stay readable; usage errors exit 2 and refusals 1, each with one
// line.
func TestTopicReassign(t *testing.T) {
	bs := "--bootstrap=" + startNodes(t, 2)
	run := func(args ...string) (string, string, int) {
		t.Helper()
		return runClientCLI(t, nil, append(args, bs, "--timeout", "30s")...)
	}
	// Both brokers must be alive for a placement over either.
	waitForCLI(t, "two alive nodes", func() bool {
		out, _, code := run("cluster", "status", "--json")
		return code == 0 && strings.Count(out, `"state":"alive"`) == 2
	})
	if out, errOut, code := run("topic", "create", "t", "--partitions", "1", "--replication-factor", "1", "--min-insync-replicas", "1"); code != 0 {
		t.Fatalf("create: %d %q %q", code, out, errOut)
	}
	if out, errOut, code := runClientCLI(t, strings.NewReader("a\nb\nc\n"), "produce", "t", bs); code != 0 {
		t.Fatalf("produce: %d %q %q", code, out, errOut)
	}
	holder := func() int32 {
		out, errOut, code := run("topic", "describe", "t", "--json")
		var d struct {
			Partitions []struct {
				Leader   int32   `json:"leader"`
				Replicas []int32 `json:"replicas"`
			} `json:"partitions"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &d) != nil || len(d.Partitions) != 1 || len(d.Partitions[0].Replicas) != 1 {
			t.Fatalf("describe: %d %q %q", code, out, errOut)
		}
		return d.Partitions[0].Replicas[0]
	}
	from := holder()
	to := 3 - from
	out, errOut, code := run("topic", "reassign", "t", "--replace", fmt1(from)+"="+fmt1(to))
	want := "t-0: replicas " + fmt1(from) + " -> " + fmt1(to) + "\nt-0: done: replicas " + fmt1(to) + ", in sync " + fmt1(to) + ", leader " + fmt1(to) + "\n"
	if code != 0 || out != want {
		t.Fatalf("reassign --replace: %d %q %q, want %q", code, out, errOut, want)
	}
	if got := holder(); got != to {
		t.Fatalf("after the move the replica is on %d, want %d", got, to)
	}
	if out, errOut, code := run("topic", "reassign", "--replicas", fmt1(from), "--partition", "0", "t"); code != 0 || !strings.Contains(out, "done: replicas "+fmt1(from)) {
		t.Fatalf("reassign --replicas back: %d %q %q", code, out, errOut)
	}
	out, errOut, code = run("topic", "reassign", "t", "--drain", fmt1(from), "--throttle", "1048576")
	if code != 0 || !strings.Contains(out, "t-0: replicas "+fmt1(from)+" -> "+fmt1(to)+"\n") ||
		!strings.HasPrefix(out, "reassignment throttle: 1048576 bytes/s on every node\n") || !strings.HasSuffix(out, "reassignment throttle removed\n") {
		t.Fatalf("reassign --drain --throttle: %d %q %q", code, out, errOut)
	}
	if st := clusterStatusJSONOf(t, bs); st["configs"] != nil {
		t.Fatalf("the throttle stayed: %v", st)
	}
	if got := holder(); got != to {
		t.Fatalf("after the drain the replica is on %d, want %d", got, to)
	}
	// Up to two replicas and back down to one (the leader's stays).
	out, errOut, code = run("topic", "reassign", "t", "--replication-factor", "2")
	if code != 0 || !strings.HasPrefix(out, "t: replication factor 1 -> 2: ") || !strings.Contains(out, "t-0: done: replicas "+fmt1(to)+","+fmt1(from)+", in sync ") {
		t.Fatalf("reassign --replication-factor 2: %d %q %q", code, out, errOut)
	}
	if out, errOut, code := run("topic", "describe", "t"); code != 0 || !strings.Contains(out, "Replication factor: 2") {
		t.Fatalf("describe after raising: %d %q %q", code, out, errOut)
	}
	out, errOut, code = run("topic", "reassign", "--replication-factor", "1", "t")
	if code != 0 || !strings.Contains(out, "t-0: done: replicas "+fmt1(to)+", in sync "+fmt1(to)+", leader "+fmt1(to)+"\n") {
		t.Fatalf("reassign --replication-factor 1: %d %q %q", code, out, errOut)
	}
	out, errOut, code = runClientCLI(t, nil, "consume", "t", "--from", "beginning", "--exit-at-end", bs)
	if code != 0 || out != "a\nb\nc\n" {
		t.Fatalf("consume after five moves: %d %q %q", code, out, errOut)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"t", "--partition", "0", "--cancel"}, 1, "no reassignment in progress"},
		{[]string{"t", "--partition", "0", "--replicas", "9"}, 1, "broker 9 is not registered"},
		{[]string{"t", "--partition", "0", "--replicas", "1,2"}, 1, "the topic's replication factor is 1"},
		{[]string{"t", "--replace", fmt1(from) + "=" + fmt1(to)}, 1, "broker " + fmt1(from) + " holds no replica of it"},
		{[]string{"nope", "--replace", "1=2"}, 1, `topic "nope" does not exist`},
		{[]string{"t", "--replicas", "1"}, 2, "--partition is required"},
		{[]string{"t", "--replace", "1=1"}, 2, "--replace wants OLD=NEW"},
		{[]string{"t", "--partition", "0"}, 2, "give exactly one of --replicas, --replace, --drain, --cancel and --replication-factor"},
		{[]string{"t", "--replication-factor", "0"}, 2, "--replication-factor must be 1-16, not 0"},
		{[]string{"t", "--replication-factor", "2", "--partition", "0"}, 2, "leave out --partition"},
		{[]string{"t", "--replication-factor", "3"}, 1, "t-0 can have at most 2 replicas on the live brokers (it has [" + fmt1(to) + "])"},
		{[]string{"nope", "--replication-factor", "1"}, 1, `topic "nope" does not exist`},
		{[]string{"t", "--drain", "0"}, 2, "--drain wants a broker id"},
		{[]string{"t", "--drain", "1", "--throttle", "-5"}, 2, "--throttle wants bytes per second"},
		{[]string{"t", "--partition", "0", "--cancel", "--throttle", "5"}, 2, "--throttle goes with a move"},
		{[]string{"t", "--drain", fmt1(from)}, 1, "broker " + fmt1(from) + " holds no replica of it"},
		{[]string{"t", "--partition", "0", "--replicas", "x"}, 2, `--replicas: "x" is not a broker id`},
	} {
		_, errOut, code := run(append([]string{"topic", "reassign"}, c.args...)...)
		oneErrorLine(t, "topic reassign "+strings.Join(c.args, " "), code, errOut, c.code, c.want)
	}
}

func fmt1(id int32) string { return strconv.Itoa(int(id)) }

// waitForCLI polls cond every 20 ms for up to 15 s.
func waitForCLI(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// --drain spreads the drained broker's replicas over the alive brokers
// outside each partition, fewest of the topic's replicas first (ties: the
// lowest id), and keeps the drained replica's place in the preference order.
func TestPlanDrainSpreadsEvenly(t *testing.T) {
	d := client.TopicDescription{Name: "t", Partitions: []client.PartitionInfo{
		{Partition: 0, Replicas: []int32{1, 2, 3}},
		{Partition: 1, Replicas: []int32{2, 1, 4}},
		{Partition: 2, Replicas: []int32{3, 4, 1}},
		{Partition: 3, Replicas: []int32{4, 2, 3}},
		{Partition: 4, Replicas: []int32{1, 3, 4}},
	}}
	moves, err := planMoves(d, topicReassignOptions{old: 1, partition: -1}, []int32{1, 2, 3, 4, 5, 6}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range moves {
		got = append(got, fmt.Sprintf("%d:%s", m.partition, joinIDs(m.target)))
	}
	want := []string{"0:5,2,3", "1:2,6,4", "2:3,4,5", "4:6,3,4"}
	if !slices.Equal(got, want) {
		t.Fatalf("moves %v, want %v", got, want)
	}
	if _, err := planMoves(d, topicReassignOptions{old: 1, partition: -1}, []int32{1, 2, 3}, nil); err == nil ||
		!strings.Contains(err.Error(), "no alive broker outside its replicas 1,2,3") {
		t.Fatalf("drain with no room: %v", err)
	}
}

// With racks, --drain puts each replica it moves in a rack none of the
// partition's other replicas is in, before counting replicas held.
func TestPlanDrainKeepsRacksApart(t *testing.T) {
	// Racks a: 1, 2; b: 3, 4; c: 5, 6. Broker 6, the only other broker in
	// rack c, holds the most replicas.
	racks := map[int32]string{1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}
	d := client.TopicDescription{Name: "t", Partitions: []client.PartitionInfo{
		{Partition: 0, Replicas: []int32{5, 1, 3}},
		{Partition: 1, Replicas: []int32{6, 1, 3}},
		{Partition: 2, Replicas: []int32{6, 2, 4}},
		{Partition: 3, Replicas: []int32{6, 1, 4}},
	}}
	moves, err := planMoves(d, topicReassignOptions{old: 5, partition: -1}, []int32{1, 2, 3, 4, 5, 6}, racks)
	if err != nil {
		t.Fatal(err)
	}
	if len(moves) != 1 || joinIDs(moves[0].target) != "6,1,3" {
		t.Fatalf("moves %v, want partition 0 to 6,1,3", moves)
	}
	for _, m := range moves {
		seen := map[string]bool{}
		for _, r := range m.target {
			if seen[racks[r]] {
				t.Fatalf("partition %d: %s puts two replicas in rack %s", m.partition, joinIDs(m.target), racks[r])
			}
			seen[racks[r]] = true
		}
	}
	// Without racks, the fewest held wins whatever the rack.
	moves, err = planMoves(d, topicReassignOptions{old: 5, partition: -1}, []int32{1, 2, 3, 4, 5, 6}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := joinIDs(moves[0].target); got != "2,1,3" {
		t.Fatalf("partition 0 without racks: %s, want 2,1,3 (broker 2 holds the fewest)", got)
	}
}
