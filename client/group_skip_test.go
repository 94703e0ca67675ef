package client

import (
	"slices"
	"testing"
	"time"
)

// A partition Skip leaves out is owned by the member (the group gives it
// to no other) but never started: Skip is asked once, it is in no
// OnAssigned, the Consumer does not fetch it, and Poll returns none of
// its records; the others are read as usual.
func TestGroupConsumerSkip(t *testing.T) {
	fc, c := groupCluster(t, 20*time.Second)
	fc.CreateTopic("pay-eu", 2)
	fc.CreateTopic("pay-copy", 1)
	ctx := testCtx(t)
	asked := map[TopicPartition]int{}
	var started []TopicPartition
	g, err := c.NewGroupConsumer(ctx, GroupConsumerConfig{Group: "g", TopicPattern: "pay-.*", From: SeekBeginning,
		Consumer:   ConsumerConfig{MaxWait: 20 * time.Millisecond},
		Skip:       func(tp TopicPartition) bool { asked[tp]++; return tp.Topic == "pay-copy" },
		OnAssigned: func(tps []TopicPartition) { started = append(started, tps...) }})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(ctx)
	produceValues(t, c, "pay-eu", 0, "a", "b")
	produceValues(t, c, "pay-eu", 1, "c")
	produceValues(t, c, "pay-copy", 0, "no")
	read := map[string]int{}
	skipped := TopicPartition{Topic: "pay-copy", Partition: 0}
	waitFor(t, "pay-eu's 3 records read", func() bool {
		msgs, err := g.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			read[m.Topic]++
		}
		if slices.Contains(g.Consumer().Assignment(), skipped) {
			t.Fatalf("the consumer fetches %s, which Skip left out", skipped)
		}
		return read["pay-eu"] == 3
	})
	for range 5 { // more polls: it is not started again
		if _, err := g.Poll(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if read["pay-copy"] != 0 || asked[skipped] != 1 || slices.Contains(started, skipped) || len(started) != 2 ||
		!slices.Contains(g.Assignment(), skipped) || slices.Contains(g.Consumer().Assignment(), skipped) {
		t.Fatalf("read %v, Skip asked %v, started %v, owned %v, fetched %v", read, asked, started, g.Assignment(), g.Consumer().Assignment())
	}
}
