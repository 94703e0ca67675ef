package cli

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// topic describe-producers against two real nodes: each `produce` run is a
// new idempotent producer, listed by the partition's leader with its last
// sequence and last batch; --broker-id asks a replica, leader or follower,
// which lists the same producers; --json carries the same; bad partitions,
// brokers and topics get one error line.
func TestTopicDescribeProducers(t *testing.T) {
	bs := "--bootstrap=" + startNodes(t, 2)
	run := func(stdin string, args ...string) (string, string, int) {
		t.Helper()
		if args[0] != "produce" {
			args = append(args, "--timeout", "20s")
		}
		return runClientCLI(t, strings.NewReader(stdin), append(args, bs)...)
	}
	if out, errOut, code := run("", "topic", "create", "pay", "--partitions", "2", "--replication-factor", "2", "--min-insync-replicas", "2"); code != 0 {
		t.Fatalf("create: %d %q %q", code, out, errOut)
	}
	out, errOut, code := run("", "topic", "describe-producers", "pay")
	if code != 0 || out != "no idempotent producers on the 2 partitions described\n" {
		t.Fatalf("before any producer: %d %q %q", code, out, errOut)
	}
	for _, lines := range []string{"a\nb\nc\n", "d\n"} {
		if out, errOut, code := run(lines, "produce", "pay", "--partition", "0"); code != 0 {
			t.Fatalf("produce: %d %q %q", code, out, errOut)
		}
	}

	out, errOut, code = run("", "topic", "describe-producers", "pay")
	rows := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	row := regexp.MustCompile(`^0 +[12] \(leader\) +\d+ +0 +(\d+) +20\d\d-\d\d-\d\dT\S+Z +(\d+)-(\d+) +[1-3] +2[34]h\d+m\d+s$`)
	if code != 0 || len(rows) != 3 || !strings.HasPrefix(rows[0], "PARTITION  BROKER") || !row.MatchString(rows[1]) || !row.MatchString(rows[2]) {
		t.Fatalf("table: exit %d, stderr %q, stdout\n%s", code, errOut, out)
	}
	if last := row.FindStringSubmatch(rows[2]); last[1] != "0" || last[2] != "3" || last[3] != "3" {
		t.Fatalf("the second producer (one record at offset 3, sequence 0): %q", rows[2])
	}

	out, errOut, code = run("", "topic", "describe-producers", "pay", "--json")
	var got topicProducersJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 0 || got.Topic != "pay" || len(got.Partitions) != 2 {
		t.Fatalf("--json: exit %d, %v, stdout %q, stderr %q", code, err, out, errOut)
	}
	p0, p1 := got.Partitions[0], got.Partitions[1]
	if !p0.Leader || len(p0.Producers) != 2 || p0.ExpirationMs != 86_400_000 || p1.Partition != 1 || len(p1.Producers) != 0 || !strings.Contains(out, `"producers":[]`) {
		t.Fatalf("--json: %s", out)
	}
	if s := p0.Producers[0]; s.LastSequence != 2 || s.FirstOffset > 2 || s.LastOffset != 2 || s.ProducerID >= p0.Producers[1].ProducerID {
		t.Fatalf("--json, the first producer (records 0-2, sequences 0-2): %+v", s)
	}

	// Each broker's own replica: one leads, the other follows; the same producers.
	roles := map[bool]int{}
	for _, id := range []string{"1", "2"} {
		out, errOut, code := run("", "topic", "describe-producers", "pay", "--broker-id", id, "--partition", "0", "--json")
		var r topicProducersJSON
		if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 || len(r.Partitions) != 1 {
			t.Fatalf("--broker-id %s: exit %d, %v, stdout %q, stderr %q", id, code, err, out, errOut)
		}
		rp := r.Partitions[0]
		roles[rp.Leader]++
		if fmt.Sprint(rp.Broker) != id || len(rp.Producers) != 2 {
			t.Fatalf("--broker-id %s: %s", id, out)
		}
		for i, s := range rp.Producers {
			w := p0.Producers[i]
			if s.ProducerID != w.ProducerID || s.LastSequence != w.LastSequence || s.FirstOffset != w.FirstOffset || s.LastOffset != w.LastOffset {
				t.Fatalf("--broker-id %s, producer %d: %+v, the leader said %+v", id, i, s, w)
			}
		}
	}
	if roles[true] != 1 || roles[false] != 1 {
		t.Fatalf("replica roles %v, want one leader and one follower", roles)
	}

	// A broker without a replica of the partition says so: exit 1.
	if out, errOut, code := run("", "topic", "create", "one", "--partitions", "1", "--replication-factor", "1", "--min-insync-replicas", "1"); code != 0 {
		t.Fatalf("create one: %d %q %q", code, out, errOut)
	}
	if out, errOut, code := run("x\n", "produce", "one", "--no-idempotence"); code != 0 { // its replica is open once this is acknowledged
		t.Fatalf("produce to one: %d %q %q", code, out, errOut)
	}
	held := 0
	for _, id := range []string{"1", "2"} {
		out, errOut, code := run("", "topic", "describe-producers", "one", "--broker-id", id, "--partition", "0")
		switch {
		case code == 0 && out == "no idempotent producers on the 1 partitions described\n":
			held++
		case code == 1 && strings.Contains(errOut, "1 of 1 partitions not described (partition 0: UnknownTopicOrPartition: node "+id+" holds no replica of one/0)"):
		default:
			t.Fatalf("--broker-id %s of a partition with one replica: %d %q %q", id, code, out, errOut)
		}
	}
	if held != 1 {
		t.Fatalf("%d brokers hold one/0, want 1", held)
	}

	t.Setenv("PAYMENTLOG_TOPIC_DESCRIBE_PRODUCERS_PARTITION", "1")
	if out, errOut, code := run("", "topic", "describe-producers", "pay"); code != 0 || out != "no idempotent producers on the 1 partitions described\n" {
		t.Fatalf("PAYMENTLOG_TOPIC_DESCRIBE_PRODUCERS_PARTITION=1: %d %q %q", code, out, errOut)
	}
	t.Setenv("PAYMENTLOG_TOPIC_DESCRIBE_PRODUCERS_PARTITION", "-1")

	_, errOut, code = run("", "topic", "describe-producers", "pay", "--partition", "5")
	oneErrorLine(t, "a partition past the last", code, errOut, 1, "partition 5 of topic \"pay\" does not exist (2 partitions)")
	_, errOut, code = run("", "topic", "describe-producers", "pay", "--broker-id", "9")
	oneErrorLine(t, "an unknown broker", code, errOut, 1, "broker 9 is not registered")
	_, errOut, code = run("", "topic", "describe-producers", "nope")
	oneErrorLine(t, "an unknown topic", code, errOut, 1, "does not exist")
	_, errOut, code = run("", "topic", "describe-producers", "pay", "--partition", "-2")
	oneErrorLine(t, "a negative partition", code, errOut, 2, "--partition")
	_, errOut, code = run("", "topic", "describe-producers", "pay", "--broker-id", "-1")
	oneErrorLine(t, "a negative broker id", code, errOut, 2, "--broker-id")
}

// topic describe-producers under ACLs needs describe on the topic: a
// principal without it is refused (TopicAuthorizationFailed), one given
// describe sees the producers, on the leader and with --broker-id.
func TestTopicDescribeProducersNeedsDescribe(t *testing.T) {
	bs, certs := startACLNodes(t, 1)
	as := func(who, stdin string, args ...string) (string, string, int) {
		t.Helper()
		args = append(args, "--bootstrap="+bs, "--tls-dir", certs, "--cert-name", who)
		if args[0] != "produce" {
			args = append(args, "--timeout", "30s")
		}
		return runClientCLI(t, strings.NewReader(stdin), args...)
	}
	if out, errOut, code := as("admin", "", "topic", "create", "payments", "--partitions", "1", "--replication-factor", "1", "--min-insync-replicas", "1"); code != 0 {
		t.Fatalf("create: %d %q %q", code, out, errOut)
	}
	if out, errOut, code := as("admin", "a\n", "produce", "payments"); code != 0 {
		t.Fatalf("produce: %d %q %q", code, out, errOut)
	}
	for _, extra := range [][]string{nil, {"--broker-id", "1"}} {
		_, errOut, code := as("billing", "", append([]string{"topic", "describe-producers", "payments"}, extra...)...)
		oneErrorLine(t, fmt.Sprintf("billing without describe %v", extra), code, errOut, 1, "TopicAuthorizationFailed")
	}
	if out, errOut, code := as("admin", "", "acl", "add", "--principal", "billing", "--operation", "describe", "--topic", "payments"); code != 0 {
		t.Fatalf("acl add: %d %q %q", code, out, errOut)
	}
	for _, extra := range [][]string{nil, {"--broker-id", "1"}} {
		out, errOut, code := as("billing", "", append([]string{"topic", "describe-producers", "payments", "--json"}, extra...)...)
		if code != 0 || !strings.Contains(out, `"last_sequence":0`) {
			t.Fatalf("billing with describe %v: %d %q %q", extra, code, out, errOut)
		}
	}
}
