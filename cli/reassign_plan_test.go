package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"paymentlog/client"
)

// Plans are read as Kafka writes them (log_dirs "any" accepted) and
// refused, by what is wrong, when malformed.
func TestParsePlan(t *testing.T) {
	kafka := `{"version":1,"partitions":[{"topic":"payments","partition":0,"replicas":[4,2,3],"log_dirs":["any","any","any"]},
		{"topic":"refunds","partition":2,"replicas":[1]}]}`
	p, err := parsePlan([]byte(kafka))
	if err != nil || len(p.Partitions) != 2 || p.Partitions[0].Replicas[0] != 4 || p.Partitions[1].Topic != "refunds" {
		t.Fatalf("%+v %v", p, err)
	}
	again, err := parsePlan([]byte(marshalPlan(p)))
	if err != nil || len(again.Partitions) != 2 || again.Partitions[0].LogDirs != nil {
		t.Fatalf("round trip: %+v %v", again, err)
	}
	for _, c := range []struct{ in, want string }{
		{``, "EOF"},
		{`{"version":2,"partitions":[{"topic":"t","partition":0,"replicas":[1]}]}`, "version 2, want 1"},
		{`{"version":1,"partitions":[]}`, "no partitions"},
		{`{"version":1,"partitions":[{"topic":"t","partition":0,"replica":[1]}]}`, `unknown field "replica"`},
		{`{"version":1,"partitions":[{"partition":0,"replicas":[1]}]}`, "partitions[0] has no topic"},
		{`{"version":1,"partitions":[{"topic":"t","partition":-1,"replicas":[1]}]}`, "t--1: partition must be 0 or more"},
		{`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[]}]}`, "t-0: 0 replicas, want 1-16"},
		{`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,0]}]}`, "t-0: 0 is not a broker id"},
		{`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,1]}]}`, "t-0: broker 1 listed twice"},
		{`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1]},{"topic":"t","partition":0,"replicas":[2]}]}`, "t-0 listed twice"},
		{`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":["/data"]}]}`, `log_dirs "/data"`},
		{`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any"]}]}`, "1 log_dirs for 2 replicas"},
		{`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1]}]} {}`, "more than one JSON value"},
		{`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[99999999999]}]}`, "cannot unmarshal"},
	} {
		if _, err := parsePlan([]byte(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("parsePlan(%s): %v, want %q", c.in, err, c.want)
		}
	}
}

// FuzzParsePlan: no input panics, and whatever parses survives
// marshalPlan and parses to the same partitions.
func FuzzParsePlan(f *testing.F) {
	f.Add([]byte(`{"version":1,"partitions":[{"topic":"payments","partition":0,"replicas":[4,2,3],"log_dirs":["any","any","any"]}]}`))
	f.Add([]byte(`{"version":1,"partitions":[{"topic":"t","partition":1,"replicas":[1]},{"topic":"u","partition":0,"replicas":[2,1]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := parsePlan(data)
		if err != nil {
			return
		}
		again, err := parsePlan([]byte(marshalPlan(p)))
		if err != nil {
			t.Fatalf("a parsed plan does not parse again: %v\n%s", err, marshalPlan(p))
		}
		a, _ := json.Marshal(stripDirs(p))
		b, _ := json.Marshal(again)
		if string(a) != string(b) {
			t.Fatalf("round trip changed the plan:\n%s\n%s", a, b)
		}
	})
}

func stripDirs(p plan) plan {
	out := plan{Version: p.Version}
	for _, pp := range p.Partitions {
		pp.LogDirs = nil
		out.Partitions = append(out.Partitions, pp)
	}
	return out
}

// --generate spreads each topic round-robin over the brokers given, keeping
// its replica count, and refuses fewer brokers than that count.
func TestGeneratePlan(t *testing.T) {
	topics := []client.TopicDescription{
		{Name: "a", Partitions: []client.PartitionInfo{{Partition: 0, Replicas: []int32{1, 2}}, {Partition: 1, Replicas: []int32{2, 1}}}},
		{Name: "b", Partitions: []client.PartitionInfo{{Partition: 0, Replicas: []int32{1, 2, 3}, RemovingReplicas: []int32{3}}}},
	}
	noRacks := func(int32) string { return "" }
	p, err := generatePlan(topics, []int32{4, 5, 6}, noRacks)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"version":1,"partitions":[
  {"topic":"a","partition":0,"replicas":[4,5]},
  {"topic":"a","partition":1,"replicas":[5,6]},
  {"topic":"b","partition":0,"replicas":[6,4]}
]}
`
	if got := marshalPlan(p); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if _, err := generatePlan(topics, []int32{4}, noRacks); err == nil || !strings.Contains(err.Error(), "a-0 has 2 replicas and only 1 brokers were given") {
		t.Fatalf("too few brokers: %v", err)
	}
}

// With racks, --generate takes the brokers rack-alternated and puts each
// partition's replicas in different racks, even with racks of unequal size.
func TestGeneratePlanRacks(t *testing.T) {
	rack := map[int32]string{1: "a", 2: "a", 3: "a", 4: "b", 5: "b"}
	var parts []client.PartitionInfo
	for p := range int32(5) {
		parts = append(parts, client.PartitionInfo{Partition: p, Replicas: []int32{1, 2}})
	}
	p, err := generatePlan([]client.TopicDescription{{Name: "a", Partitions: parts}}, []int32{1, 2, 3, 4, 5},
		func(id int32) string { return rack[id] })
	if err != nil {
		t.Fatal(err)
	}
	leaders := map[int32]bool{}
	for _, pp := range p.Partitions {
		if len(pp.Replicas) != 2 || rack[pp.Replicas[0]] == rack[pp.Replicas[1]] {
			t.Fatalf("%s-%d: replicas %v in one rack", pp.Topic, pp.Partition, pp.Replicas)
		}
		leaders[pp.Replicas[0]] = true
	}
	if len(leaders) != 5 {
		t.Fatalf("5 partitions over 5 brokers led by %v", leaders)
	}
}

// A plan may change a topic's replica count only for all its partitions at
// once; partitions it names must exist.
func TestCheckPlan(t *testing.T) {
	topics := map[string]client.TopicDescription{
		"a": {Name: "a", ReplicationFactor: 2, Partitions: []client.PartitionInfo{{Partition: 0}, {Partition: 1}}},
	}
	pp := func(part int32, reps ...int32) planPartition {
		return planPartition{Topic: "a", Partition: part, Replicas: reps}
	}
	if rf, err := checkPlan(plan{Partitions: []planPartition{pp(0, 1, 2)}}, topics); err != nil || len(rf) != 0 {
		t.Fatalf("same count: %v %v", rf, err)
	}
	if rf, err := checkPlan(plan{Partitions: []planPartition{pp(0, 1, 2, 3), pp(1, 2, 3, 1)}}, topics); err != nil || rf["a"] != 3 {
		t.Fatalf("all partitions to 3: %v %v", rf, err)
	}
	for _, c := range []struct {
		p    plan
		want string
	}{
		{plan{Partitions: []planPartition{pp(0, 1, 2, 3)}}, "must give all 2 partitions one count"},
		{plan{Partitions: []planPartition{pp(0, 1, 2, 3), pp(1, 1)}}, "must give all 2 partitions one count"},
		{plan{Partitions: []planPartition{pp(2, 1, 2)}}, "a-2 does not exist"},
		{plan{Partitions: []planPartition{{Topic: "b", Replicas: []int32{1}}}}, "b-0 does not exist"},
	} {
		if _, err := checkPlan(c.p, topics); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.p, err, c.want)
		}
	}
}

// The plan workflow against real nodes: --generate proposes a plan, --plan
// executes it over two topics (writing the rollback file), --verify says
// every partition is done, and the rollback plan puts them back; a plan
// giving a topic's partitions another replica count changes its
// replication factor. A plan
// whose move cannot finish (its new broker is down) is reported in
// progress by --verify and undone by --cancel. Records written before stay
// readable.
func TestTopicReassignPlan(t *testing.T) {
	bootstrap, nodes := startNodeSet(t, 3)
	bs := "--bootstrap=" + bootstrap
	run := func(args ...string) (string, string, int) {
		t.Helper()
		return runClientCLI(t, nil, append(args, bs, "--timeout", "30s")...)
	}
	waitForCLI(t, "three alive nodes", func() bool {
		out, _, code := run("cluster", "status", "--json")
		return code == 0 && strings.Count(out, `"state":"alive"`) == 3
	})
	for _, name := range []string{"a", "b"} {
		if out, errOut, code := run("topic", "create", name, "--partitions", "2", "--replication-factor", "2", "--min-insync-replicas", "1"); code != 0 {
			t.Fatalf("create %s: %d %q %q", name, code, out, errOut)
		}
		if out, errOut, code := runClientCLI(t, strings.NewReader("x\ny\n"), "produce", name, "--key", "k", bs); code != 0 {
			t.Fatalf("produce: %d %q %q", code, out, errOut)
		}
	}
	proposed, errOut, code := run("topic", "reassign", "a,b", "--generate", "--brokers", "3,1,2")
	if code != 0 || !strings.HasPrefix(errOut, "Current partition replica assignment\n{") {
		t.Fatalf("generate: %d %q %q", code, proposed, errOut)
	}
	dir := t.TempDir()
	planFile, rollbackFile := filepath.Join(dir, "plan.json"), filepath.Join(dir, "rollback.json")
	if err := os.WriteFile(planFile, []byte(proposed), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run("topic", "reassign", "--plan", planFile, "--rollback-file", rollbackFile)
	if code != 0 || strings.Count(out, ": done: replicas ") != 4 || !strings.HasPrefix(out, "Current partition replica assignment") {
		t.Fatalf("execute: %d %q %q", code, out, errOut)
	}
	out, errOut, code = run("topic", "reassign", "--plan", planFile, "--verify")
	if code != 0 || strings.Count(out, ": done: ") != 4 || !strings.Contains(out, "a-0: done: replicas 3,1,") || !strings.Contains(out, "b-1: done: replicas 3,1,") {
		t.Fatalf("verify: %d %q %q", code, out, errOut)
	}
	// The rollback file is a plan back to where the partitions were.
	out, errOut, code = run("topic", "reassign", "--plan", rollbackFile)
	if code != 0 || strings.Count(out, ": done: replicas ") != 4 {
		t.Fatalf("roll back: %d %q %q", code, out, errOut)
	}
	if out, errOut, code := run("topic", "reassign", "--plan", rollbackFile, "--verify"); code != 0 {
		t.Fatalf("verify the rollback: %d %q %q", code, out, errOut)
	}
	// The rollback file is not overwritten.
	if _, errOut, code := run("topic", "reassign", "--plan", planFile, "--rollback-file", rollbackFile); code != 1 || !strings.Contains(errOut, "file exists") {
		t.Fatalf("second rollback file: %d %q", code, errOut)
	}

	// A plan that gives every partition of b three replicas changes its
	// replication factor.
	rf3 := filepath.Join(dir, "rf3.json")
	if err := os.WriteFile(rf3, []byte(`{"version":1,"partitions":[{"topic":"b","partition":0,"replicas":[1,2,3]},{"topic":"b","partition":1,"replicas":[2,3,1]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = run("topic", "reassign", "--plan", rf3)
	if code != 0 || !strings.Contains(out, "b: replication factor 2 -> 3\n") || !strings.Contains(out, "b-1: done: replicas 2,3,1, in sync ") {
		t.Fatalf("plan to three replicas: %d %q %q", code, out, errOut)
	}
	if out, errOut, code := run("topic", "describe", "b"); code != 0 || !strings.Contains(out, "Replication factor: 3") {
		t.Fatalf("describe b: %d %q %q", code, out, errOut)
	}

	// Broker 3 goes down (every partition keeps a live replica): a plan
	// that moves c-0 (one replica, on 1 or 2) there cannot finish.
	nodes[2].Kill()
	waitForCLI(t, "node 3 fenced", func() bool {
		out, _, code := run("cluster", "status", "--json")
		return code == 0 && strings.Count(out, `"state":"alive"`) == 2
	})
	if out, errOut, code := run("topic", "create", "c", "--partitions", "1", "--replication-factor", "1", "--min-insync-replicas", "1"); code != 0 {
		t.Fatalf("create c: %d %q %q", code, out, errOut)
	}
	stuck := filepath.Join(dir, "stuck.json")
	if err := os.WriteFile(stuck, []byte(`{"version":1,"partitions":[{"topic":"c","partition":0,"replicas":[3]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = run("topic", "reassign", "--plan", stuck, "--no-wait")
	if code != 0 || !strings.Contains(out, "c-0: replicas ") {
		t.Fatalf("execute stuck: %d %q %q", code, out, errOut)
	}
	out, errOut, code = run("topic", "reassign", "--plan", stuck, "--verify")
	if code != 1 || !strings.Contains(out, "c-0: in progress: replicas 3,") || !strings.Contains(errOut, "1 of the plan's 1 partitions are not done") {
		t.Fatalf("verify stuck: %d %q %q", code, out, errOut)
	}
	out, errOut, code = run("topic", "reassign", "--plan", stuck, "--cancel")
	if code != 0 || out != "c-0: reassignment cancelled\n" {
		t.Fatalf("cancel: %d %q %q", code, out, errOut)
	}
	out, errOut, code = run("topic", "reassign", "--plan", stuck, "--verify")
	if code != 1 || !strings.Contains(out, "c-0: not as planned: replicas ") {
		t.Fatalf("verify after cancel: %d %q %q", code, out, errOut)
	}
	for _, name := range []string{"a", "b"} {
		out, errOut, code := runClientCLI(t, nil, "consume", name, "--from", "beginning", "--exit-at-end", bs)
		if code != 0 || out != "x\ny\n" {
			t.Fatalf("consume %s after the moves: %d %q %q", name, code, out, errOut)
		}
	}

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--plan", filepath.Join(dir, "nope.json")}, 2, "no such file"},
		{[]string{"a", "--plan", planFile}, 2, "the plan names the topics"},
		{[]string{"--plan", planFile, "--verify", "--cancel"}, 2, "at most one of --verify and --cancel"},
		{[]string{"--plan", planFile, "--partition", "0"}, 2, "--partition does not go with --plan"},
		{[]string{"a", "--verify"}, 2, "--verify goes with --plan"},
		{[]string{"a", "--generate"}, 2, "--generate and --brokers go together"},
		{[]string{"a", "--generate", "--brokers", "1,1"}, 2, "broker 1 listed twice"},
		{[]string{"a", "--generate", "--brokers", "1", "--cancel"}, 2, "--cancel does not go with --generate"},
		{[]string{"nope", "--generate", "--brokers", "1"}, 1, `topic "nope" does not exist`},
	} {
		_, errOut, code := run(append([]string{"topic", "reassign"}, c.args...)...)
		oneErrorLine(t, "topic reassign "+strings.Join(c.args, " "), code, errOut, c.code, c.want)
	}
}
