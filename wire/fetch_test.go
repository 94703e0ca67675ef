package wire

import (
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// olderFetchPartition and olderFetchPartitionResponse are the messages as
// clients and brokers without the KIP-320 fields encode them.
type olderFetchPartition struct {
	Partition   int32 `msgpack:"p"`
	Offset      int64 `msgpack:"off"`
	MaxBytes    int32 `msgpack:"max"`
	LeaderEpoch int32 `msgpack:"epoch"`
}

type olderFetchPartitionResponse struct {
	Partition     int32     `msgpack:"p"`
	Err           ErrorCode `msgpack:"err"`
	HighWatermark int64     `msgpack:"hw"`
	Records       Bytes     `msgpack:"records"`
}

// TestFetchFieldsAbsent: a fetch from an older client is not checked (its
// last fetched epoch decodes as -1, not as epoch 0), and an answer from an
// older broker is no divergence.
func TestFetchFieldsAbsent(t *testing.T) {
	b, err := msgpack.Marshal(struct {
		Parts []olderFetchPartition `msgpack:"parts"`
	}{[]olderFetchPartition{{Partition: 1, Offset: 7, MaxBytes: 100, LeaderEpoch: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	var req FetchRequest
	if err := msgpack.Unmarshal(b, &req); err != nil {
		t.Fatal(err)
	}
	if want := (FetchPartition{Partition: 1, Offset: 7, MaxBytes: 100, LeaderEpoch: 3, LastFetchedEpoch: -1}); len(req.Parts) != 1 || req.Parts[0] != want {
		t.Fatalf("decoded %+v, want %+v", req.Parts, want)
	}

	b, err = msgpack.Marshal(struct {
		Parts []olderFetchPartitionResponse `msgpack:"parts"`
	}{[]olderFetchPartitionResponse{{Partition: 1, HighWatermark: 9, Records: Bytes("xyz")}}})
	if err != nil {
		t.Fatal(err)
	}
	var resp FetchResponse
	if err := msgpack.Unmarshal(b, &resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.Parts) != 1 || resp.Parts[0].Diverging != nil || string(resp.Parts[0].Records) != "xyz" {
		t.Fatalf("decoded %+v", resp.Parts)
	}
}

// TestFetchFieldsRoundTrip: the new fields survive encoding, epoch 0 included.
func TestFetchFieldsRoundTrip(t *testing.T) {
	for _, m := range []any{
		&FetchRequest{Topic: "t", Parts: []FetchPartition{{Offset: 3, LeaderEpoch: -1, LastFetchedEpoch: 0},
			{Partition: 1, LastFetchedEpoch: -1}, {Partition: 2, LastFetchedEpoch: 7}}},
		&FetchResponse{Parts: []FetchPartitionResponse{{Partition: 0, Diverging: &EpochEndOffset{Epoch: 0, EndOffset: 1}},
			{Partition: 1, Diverging: &EpochEndOffset{Epoch: -1, EndOffset: 0}}, {Partition: 2, Records: Bytes{1}}}},
	} {
		b, err := msgpack.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		w := reflect.New(reflect.TypeOf(m).Elem()).Interface()
		if err := msgpack.Unmarshal(b, w); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(m, w) {
			t.Fatalf("%T: round trip changed\n%+v\ninto\n%+v", m, m, w)
		}
	}
}
