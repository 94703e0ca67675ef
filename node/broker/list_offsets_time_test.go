package broker

import (
	"context"
	"testing"
	"time"

	"paymentlog/wire"
)

// ListOffsets by timestamp answers the first offset whose record is stamped
// at or after the time (within a batch too), and -1 past the last record;
// followers refuse it as they refuse every ListOffsets.
func TestListOffsetsByTimestamp(t *testing.T) {
	c := newTestCluster(t, clusterOptions{})
	c.createPartition("payments", 0, []int32{1, 2, 3}, 1, 2)
	at := func(ms int64) time.Time { return time.UnixMilli(ms) }
	for _, b := range [][]byte{
		buildBatchAt(-1, -1, at(1000), "a", "b", "c"), // offsets 0-2
		buildBatchAt(-1, -1, at(2000), "d"),           // 3
		buildBatchAt(-1, -1, at(3000), "e", "f"),      // 4-5
	} {
		if r := mustProduce(t, c, wire.AcksAll, b); r.Err != wire.None {
			t.Fatalf("produce: %+v", r)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tc := range []struct{ ts, want int64 }{
		{0, 0}, {999, 0}, {1000, 0}, {1001, 3}, {2000, 3}, {2500, 4}, {3000, 4}, {3001, -1},
	} {
		var lo wire.ListOffsetsResponse
		err := c.client.Call(ctx, c.node(1).addr, wire.TypeListOffsets, wire.ListOffsetsRequest{Topic: "payments",
			Parts: []wire.ListOffsetsPartition{{Partition: 0, Timestamp: tc.ts}}}, &lo)
		if err != nil || len(lo.Parts) != 1 || lo.Parts[0].Err != wire.None || lo.Parts[0].Offset != tc.want {
			t.Errorf("timestamp %d: %+v %v; want offset %d", tc.ts, lo, err, tc.want)
		}
	}
	var lo wire.ListOffsetsResponse
	err := c.client.Call(ctx, c.node(2).addr, wire.TypeListOffsets, wire.ListOffsetsRequest{Topic: "payments",
		Parts: []wire.ListOffsetsPartition{{Partition: 0, Timestamp: 1000}}}, &lo)
	if err != nil || len(lo.Parts) != 1 || lo.Parts[0].Err != wire.NotLeader {
		t.Fatalf("on a follower: %+v %v; want NotLeader", lo, err)
	}
}
