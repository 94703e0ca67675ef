package client

import (
	"errors"
	"testing"
	"time"

	"paymentlog/client/clienttest"
)

// A position that retention deleted: without OnOffsetReset Poll reports
// OffsetOutOfRange naming the log start; with it, the consumer goes on at
// the log start and reports the offsets skipped (auto.offset.reset=earliest).
func TestConsumerBelowLogStart(t *testing.T) {
	fc := clienttest.New(1)
	fc.CreateTopic("t", 1)
	c := mustFakeClient(t, fc)
	produceValues(t, c, "t", 0, "a", "b", "c", "d")
	fc.DeleteBefore("t", 0, 2)
	tp := TopicPartition{"t", 0}

	cs := c.NewConsumer(ConsumerConfig{MaxWait: 30 * time.Millisecond})
	cs.Assign([]TopicPartition{tp}, 0)
	_, err := cs.Poll(testCtx(t))
	var oor *OffsetOutOfRangeError
	if !errors.As(err, &oor) || oor.Requested != 0 || oor.Start != 2 {
		t.Fatalf("without a reset: %v; want OffsetOutOfRange starting at 2", err)
	}
	cs.Close()

	var from, to int64 = -1, -1
	cs = c.NewConsumer(ConsumerConfig{MaxWait: 30 * time.Millisecond, OnOffsetReset: func(got TopicPartition, f, t int64) {
		if got == tp {
			from, to = f, t
		}
	}})
	defer cs.Close()
	cs.Assign([]TopicPartition{tp}, 0)
	msgs := pollN(t, cs, 2)
	if msgs[0].Offset != 2 || string(msgs[0].Value) != "c" || string(msgs[1].Value) != "d" {
		t.Fatalf("after the reset: %+v", msgs)
	}
	if from != 0 || to != 2 {
		t.Fatalf("reset reported [%d, %d), want [0, 2)", from, to)
	}
	// Past the end is still an error.
	if err := cs.Seek(tp, 99); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.Poll(testCtx(t)); !errors.As(err, &oor) || oor.Requested != 99 {
		t.Fatalf("past the end with a reset: %v", err)
	}
}
