package client

import (
	"strings"
	"testing"

	"paymentlog/client/clienttest"
)

// A node answering InitProducerID with an id of 0 or below is not believed
// (segment.BuilderOptions reads id 0 as "not idempotent": the broker would
// skip the batches' duplicate check): the client asks the next node, and
// fails naming an id when every node answers so.
func TestInitProducerIDRefusesIDsNotAboveZero(t *testing.T) {
	fc := clienttest.New(3)
	c := mustFakeClient(t, fc)
	ctx := testCtx(t)

	fc.SetNextProducerID(-1) // the three nodes in turn: -1, 0, 1
	pid, _, err := c.initProducerID(ctx)
	if err != nil || pid != 1 {
		t.Fatalf("InitProducerID answered -1, then 0, then 1: got id %d, %v; want 1", pid, err)
	}

	fc.SetNextProducerID(-2) // -2, -1, 0: no node hands out a usable id
	pid, _, err = c.initProducerID(ctx)
	// (The error names the last answer to arrive: with a hedge, any of them.)
	if err == nil || !strings.Contains(err.Error(), "handed out producer id ") {
		t.Fatalf("every node answered an id <= 0: got id %d, %v; want an error naming the id", pid, err)
	}
}
