package cli

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"paymentlog/wire"
)

// TestTopicAlterAddsPartitions: `topic alter NAME --partitions N` with the
// flag before or after the name or from PAYMENTLOG_TOPIC_ALTER_PARTITIONS
// raises the count and exits 0; a count that does not grow, a missing
// --partitions and an unknown topic exit non-zero with one error line.
func TestTopicAlterAddsPartitions(t *testing.T) {
	fc := startFakeCluster(t)
	bs := "--bootstrap=" + fc.Bootstrap()
	if _, errOut, code := runClientCLI(t, nil, "topic", "create", "payments", "--partitions", "2", bs); code != 0 {
		t.Fatalf("create: %d %q", code, errOut)
	}
	out, errOut, code := runClientCLI(t, nil, "topic", "alter", "payments", "--partitions", "3", bs)
	if code != 0 || out != "topic payments now has 3 partitions\n" {
		t.Fatalf("alter (flag after the name): %d %q %q", code, out, errOut)
	}
	if _, errOut, code := runClientCLI(t, nil, "topic", "alter", "--partitions", "4", bs, "payments"); code != 0 {
		t.Fatalf("alter (flag before the name): %d %q", code, errOut)
	}
	t.Setenv("PAYMENTLOG_TOPIC_ALTER_PARTITIONS", "5")
	if _, errOut, code := runClientCLI(t, nil, "topic", "alter", "payments", bs); code != 0 {
		t.Fatalf("alter (env): %d %q", code, errOut)
	}
	out, _, _ = runClientCLI(t, nil, "topic", "describe", "payments", "--json", bs)
	if strings.Count(out, `"partition":`) != 5 {
		t.Fatalf("describe after alter: %s", out)
	}
	t.Setenv("PAYMENTLOG_TOPIC_ALTER_PARTITIONS", "")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"payments", "--partitions", "5"}, 1, `alter topic payments: InvalidPartitions: topic "payments" already has 5 partitions`},
		{[]string{"payments", "--partitions", "4"}, 1, "the count can only grow, not shrink to 4"},
		{[]string{"nope", "--partitions", "4"}, 1, `topic "nope" does not exist`},
		{[]string{"payments"}, 2, "--partitions is required"},
		{[]string{"payments", "--partitions", "0"}, 2, "--partitions must be at least 1"},
		{[]string{"--partitions", "7"}, 2, "missing topic name"},
	} {
		_, errOut, code := runClientCLI(t, nil, append(append([]string{"topic", "alter"}, tc.args...), bs)...)
		if code != tc.code || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("topic alter %v: exit %d %q, want exit %d and one line with %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
}

// TestConsumeFollowsAddedPartitions: `consume TOPIC` (all partitions, no
// --exit-at-end) reads partitions added while it runs, from their
// beginning.
func TestConsumeFollowsAddedPartitions(t *testing.T) {
	fc := startFakeCluster(t)
	bs := "--bootstrap=" + fc.Bootstrap()
	if _, errOut, code := runClientCLI(t, nil, "topic", "create", "payments", "--partitions", "2", bs); code != 0 {
		t.Fatalf("create: %d %q", code, errOut)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- runWithInput(ctx, []string{"paymentlog", "consume", "payments", "--max", "4", "--from", "end",
			"--metadata-max-age", "50ms", "--max-wait", "20ms", bs}, strings.NewReader(""), &out, &errb)
	}()
	// Wait until consume has its end offsets (it fetched metadata), then grow
	// the topic and write one record to each partition.
	waitCalls := time.Now().Add(10 * time.Second)
	for fc.Calls(wire.TypeListOffsets) == 0 {
		if time.Now().After(waitCalls) {
			t.Fatal("consume did not ask for its end offsets within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	fc.AddPartitions("payments", 4)
	for p := 0; p < 4; p++ {
		if _, errOut, code := runClientCLI(t, strings.NewReader(fmt.Sprintf("in-%d\n", p)), "produce", "payments", "--partition", fmt.Sprint(p), bs); code != 0 {
			t.Fatalf("produce to %d: %d %q", p, code, errOut)
		}
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("consume: exit %d %q", code, errb.String())
		}
	case <-ctx.Done():
		t.Fatalf("consume did not get 4 records: %q %q", out.String(), errb.String())
	}
	for p := 0; p < 4; p++ {
		if !strings.Contains(out.String(), fmt.Sprintf("in-%d\n", p)) {
			t.Errorf("consume output %q lacks in-%d", out.String(), p)
		}
	}
	if !strings.Contains(errb.String(), "partition 3 was added") {
		t.Errorf("stderr %q does not say partition 3 was added", errb.String())
	}
}
