package cli

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/segment"
)

// (e) One error line each: usage errors (exit 2) before any connection,
// and target topics the mirror refuses to write into (exit 1), before
// anything is copied.
func TestMirrorRefusals(t *testing.T) {
	e := startMirrorEnv(t)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--topics", "a", "--topic-pattern", "b"}, 2, "--topics and --topic-pattern: give one or the other"},
		{nil, 2, "no topics to mirror: give --topics A,B or --topic-pattern REGEXP"},
		{[]string{"--topic-pattern", "pay(ments"}, 2, `--topic-pattern: "pay(ments" is not a regular expression`},
		{[]string{"--topics", "__cluster_metadata"}, 2, `--topics: "__cluster_metadata" is not a topic name that can be mirrored`},
		{[]string{"--topics", "t", "extra"}, 2, "mirror takes no arguments, got extra"},
		{[]string{"--topics", "t", "--commit-interval", "-1s"}, 2, "--commit-interval must be >= 0"},
		{[]string{"--topics", "t", "--replication-factor", "1", "--min-insync-replicas", "2"}, 2, "--min-insync-replicas 2 is above --replication-factor 1"},
		{[]string{"--topics", "t", "--source-bootstrap", e.dst}, 2, "the source and the target must be different clusters"},
		{[]string{"--topics", "t", "--sync-group-offsets", "app," + defaultMirrorGroup}, 2, "--sync-group-offsets: paymentlog-mirror is the mirror's own --group"},
		{[]string{"--topics", "t", "--sync-group-pattern", "app("}, 2, `--sync-group-pattern: "app(" is not a regular expression`},
		{[]string{"--topics", "t", "--sync-group-offsets", "app", "--offset-syncs-topic", ""}, 2, "--offset-syncs-topic cannot be empty"},
		{[]string{"--topics", "t", "--offset-syncs-topic", "__syncs"}, 2, `--offset-syncs-topic: "__syncs" is not a topic name it can use`},
		{[]string{"--topics", "t," + defaultOffsetSyncsTopic}, 2, "--topics: the offset syncs topic is the mirror's own, not one to mirror"},
	} {
		errOut, code := e.mirror(t, c.args...)
		oneErrorLine(t, "mirror "+strings.Join(c.args, " "), code, errOut, c.code, c.want)
	}
	_, errOut, code := runClientCLI(t, nil, "mirror", "--topics", "t", "--bootstrap", e.dst)
	oneErrorLine(t, "mirror without --source-bootstrap", code, errOut, 2, "--source-bootstrap: required")
	// The flags' environment variables.
	t.Setenv("PAYMENTLOG_MIRROR_TOPIC_PATTERN", "t.*")
	errOut, code = e.mirror(t, "--topics", "t")
	oneErrorLine(t, "mirror --topics with PAYMENTLOG_MIRROR_TOPIC_PATTERN", code, errOut, 2, "--topics and --topic-pattern")
	t.Setenv("PAYMENTLOG_MIRROR_TOPIC_PATTERN", "")

	createTopicN(t, e, "t", 2)
	createTopic(t, e.dstC, client.TopicSpec{Name: "t", Partitions: 3, ReplicationFactor: 1, MinISR: 1})
	errOut, code = e.mirror(t, "--topics", "t", "--exit-at-end")
	oneErrorLine(t, "a target topic with more partitions", code, errOut, 1,
		"mirror: topic t has 3 partitions on the target and 2 on the source: refusing to mirror into it")

	createTopic(t, e.srcC, client.TopicSpec{Name: "accounts", Partitions: 1, ReplicationFactor: 1, MinISR: 1,
		Configs: map[string]string{"cleanup.policy": "compact"}})
	createTopic(t, e.dstC, client.TopicSpec{Name: "accounts", Partitions: 1, ReplicationFactor: 1, MinISR: 1})
	t.Setenv("PAYMENTLOG_MIRROR_TOPICS", "accounts")
	errOut, code = e.mirror(t, "--exit-at-end")
	oneErrorLine(t, "a target topic with another cleanup.policy", code, errOut, 1,
		"mirror: topic accounts has cleanup.policy=delete on the target and compact on the source")

	errOut, code = e.mirror(t, "--topics", "nosuch", "--exit-at-end")
	oneErrorLine(t, "a topic missing on the source", code, errOut, 1, "mirror: describe topic nosuch on the source:")

	// The loop guard: --skip-mirrored leaves out records that were
	// mirrored to the source from elsewhere, and commits past them.
	createTopicN(t, e, "loop", 1)
	produceRecords(t, e.srcC, "loop", 0, 0, 5)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	prod, err := e.srcC.NewProducer(client.ProducerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		rec := &client.Record{Topic: "loop", Value: []byte("from elsewhere"),
			Headers: []segment.RecordHeader{{Key: mirrorHeader, Value: []byte("loop/0/" + strconv.Itoa(i))}}}
		if _, err := prod.ProduceSync(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	prod.Close(ctx)
	produceRecords(t, e.srcC, "loop", 0, 7, 9)
	errOut, code = e.mirror(t, "--topics", "loop", "--exit-at-end", "--skip-mirrored")
	if code != 0 {
		t.Fatalf("mirror --skip-mirrored: exit %d, stderr %q", code, errOut)
	}
	got := sourceOffsets(t, "loop", 0, readPartitions(t, e.dstC, "loop")[0])
	if want := []int64{0, 1, 2, 3, 4, 7, 8}; !slices.Equal(got, want) {
		t.Fatalf("--skip-mirrored copied source offsets %v; want %v", got, want)
	}
	if c := groupOffsets(t, e.srcC, defaultMirrorGroup, "loop"); c[0] != 9 {
		t.Fatalf("--skip-mirrored committed %v; want 9", c)
	}
}
