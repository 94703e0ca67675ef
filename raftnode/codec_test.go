package raftnode

import (
	"bytes"
	"errors"
	"math"
	"runtime"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"paymentlog/quic"
)

func TestEnvelopeRoundTrip(t *testing.T) {
	for _, id := range []proposalID{{0, 0}, {1, 2}, {math.MaxUint64, math.MaxUint64}} {
		for _, payload := range [][]byte{nil, {}, []byte("x"), bytes.Repeat([]byte{0xff}, 300)} {
			b := encodeEnvelope(id, payload)
			gid, gp, err := decodeEnvelope(b)
			if err != nil || gid != id || !bytes.Equal(gp, payload) {
				t.Fatalf("round trip %v %q: %v %q %v", id, payload, gid, gp, err)
			}
		}
	}
	for _, bad := range [][]byte{nil, {2, 1, 1}, {1}, {1, 0x80}, {1, 1, 0x80}} {
		if _, _, err := decodeEnvelope(bad); !errors.Is(err, errBadEnvelope) {
			t.Fatalf("decodeEnvelope(%x) = %v", bad, err)
		}
	}
}

func TestSnapshotDataRoundTrip(t *testing.T) {
	d := snapshotData{peers: map[uint64]string{1: "127.0.0.1:7101", 9: "", 4: "h:1"}, sm: []byte("image")}
	got, err := decodeSnapshotData(encodeSnapshotData(d))
	if err != nil || len(got.peers) != 3 || got.peers[1] != d.peers[1] || got.peers[4] != "h:1" || string(got.sm) != "image" {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	for _, bad := range [][]byte{nil, {2}, {1, 1}, {1, 1, 0}, {1, 1, 1, 5, 'a'}} {
		if _, err := decodeSnapshotData(bad); !errors.Is(err, errBadEnvelope) {
			t.Fatalf("decodeSnapshotData(%x) = %v", bad, err)
		}
	}
}

func TestHardStateRoundTripAndCorruption(t *testing.T) {
	hs := &pb.HardState{Term: new(uint64(7)), Vote: new(uint64(3)), Commit: new(uint64(1 << 40))}
	b := encodeHardState(hs)
	got, err := decodeHardState(b)
	if err != nil || !proto.Equal(got, hs) {
		t.Fatalf("round trip: %v %v", got, err)
	}
	for i := range b {
		c := bytes.Clone(b)
		c[i] ^= 0x01
		if _, err := decodeHardState(c); !errors.Is(err, ErrCorruptState) {
			t.Fatalf("flipped byte %d accepted: %v", i, err)
		}
	}
	if _, err := decodeHardState(b[:len(b)-1]); !errors.Is(err, ErrCorruptState) {
		t.Fatalf("short file accepted: %v", err)
	}
}

func TestSnapFileRoundTripAndCorruption(t *testing.T) {
	snap := &pb.Snapshot{
		Metadata: &pb.SnapshotMetadata{Index: new(uint64(42)), Term: new(uint64(3)),
			ConfState: &pb.ConfState{Voters: []uint64{1, 2, 3}, Learners: []uint64{4}}},
		Data: []byte("state"),
	}
	b, err := encodeSnapFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeSnapFile(b)
	if err != nil || !proto.Equal(got, snap) {
		t.Fatalf("round trip: %v %v", got, err)
	}
	for i := range b {
		c := bytes.Clone(b)
		c[i] ^= 0x40
		if _, err := decodeSnapFile(c); !errors.Is(err, ErrCorruptState) {
			t.Fatalf("flipped byte %d accepted: %v", i, err)
		}
	}
	name := snapFileName(42, 3)
	if name != "snapshot-00000000000000000042-00000000000000000003.snap" {
		t.Fatalf("name %q", name)
	}
	if i, tm, ok := parseSnapFileName(name); !ok || i != 42 || tm != 3 {
		t.Fatalf("parse %q: %d %d %v", name, i, tm, ok)
	}
	for _, bad := range []string{"snapshot-1-2.snap", "snapshot-00000000000000000042.snap", "x.snap", name + ".tmp"} {
		if _, _, ok := parseSnapFileName(bad); ok {
			t.Fatalf("parsed %q", bad)
		}
	}
}

func TestEntryRecordRoundTrip(t *testing.T) {
	for _, e := range []*pb.Entry{
		{Type: pb.EntryNormal.Enum(), Term: new(uint64(1)), Index: new(uint64(1))},
		{Type: pb.EntryConfChange.Enum(), Term: new(uint64(math.MaxUint64)), Index: new(uint64(7)), Data: []byte{1, 2}},
		{Type: pb.EntryConfChangeV2.Enum(), Term: new(uint64(1 << 33)), Index: new(uint64(9)), Data: []byte("x")},
	} {
		got, err := decodeEntryRecord(e.GetIndex(), encodeEntryKey(e), e.GetData())
		if err != nil || !proto.Equal(got, e) {
			t.Fatalf("round trip %v: %v %v", e, got, err)
		}
	}
	if epochOf(1<<40) != math.MaxInt32 || epochOf(5) != 5 {
		t.Fatal("epochOf")
	}
	for _, bad := range [][]byte{nil, {1, 0}, {2, 0, 1}, {1, 9, 1}, {1, 0, 0x80}, {1, 0, 1, 1}} {
		if _, err := decodeEntryRecord(1, bad, nil); !errors.Is(err, errBadEntryRecord) {
			t.Fatalf("decodeEntryRecord(%x) = %v", bad, err)
		}
	}
}

func TestFrameMessagesChecks(t *testing.T) {
	msg := func(m *pb.Message) []byte {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	app := &pb.Message{Type: pb.MsgApp.Enum(), From: new(uint64(2)), To: new(uint64(1)), Term: new(uint64(3)),
		Index: new(uint64(5)), LogTerm: new(uint64(2)),
		Entries: []*pb.Entry{{Index: new(uint64(6)), Term: new(uint64(2))}, {Index: new(uint64(7)), Term: new(uint64(3))}}}
	ok := &raftFrame{From: 2, To: 1, Msgs: [][]byte{msg(app)}}
	if ms, err := decodeFrameMessages(ok, 1); err != nil || len(ms) != 1 {
		t.Fatalf("good frame: %v", err)
	}
	snap := &pb.Message{Type: pb.MsgSnap.Enum(), From: new(uint64(2)), To: new(uint64(1)), Term: new(uint64(3)),
		Snapshot: &pb.Snapshot{Data: encodeSnapshotData(snapshotData{peers: map[uint64]string{2: "b"}, sm: []byte("image")}),
			Metadata: &pb.SnapshotMetadata{Index: new(uint64(5)), Term: new(uint64(2))}}}
	if _, err := decodeFrameMessages(&raftFrame{From: 2, To: 1, Msgs: [][]byte{msg(snap)}}, 1); err != nil {
		t.Fatalf("good snapshot: %v", err)
	}
	if _, err := decodeFrameMessages(ok, 3); !errors.Is(err, errWrongNode) {
		t.Fatalf("frame for another node: %v", err)
	}
	bad := []*pb.Message{
		{Type: pb.MsgHeartbeat.Enum(), From: new(uint64(2)), To: new(uint64(3))}, // not to us
		{Type: pb.MsgHeartbeat.Enum(), From: new(uint64(4)), To: new(uint64(1))}, // not from the stream's peer
		{Type: pb.MsgHup.Enum(), From: new(uint64(2)), To: new(uint64(1))},       // local
		{Type: pb.MessageType(99).Enum(), From: new(uint64(2)), To: new(uint64(1))},
		{Type: pb.MsgApp.Enum(), From: new(uint64(2)), To: new(uint64(1)), Term: new(uint64(3)), Index: new(uint64(5)),
			Entries: []*pb.Entry{{Index: new(uint64(7)), Term: new(uint64(3))}}}, // gap
		{Type: pb.MsgApp.Enum(), From: new(uint64(2)), To: new(uint64(1)), Term: new(uint64(3)), Index: new(uint64(5)),
			Entries: []*pb.Entry{{Index: new(uint64(6)), Term: new(uint64(4))}}}, // entry from the future
		{Type: pb.MsgSnap.Enum(), From: new(uint64(2)), To: new(uint64(1)), Term: new(uint64(3))}, // empty snapshot
		// Snapshot data without raftnode's envelope: installed, it would stop
		// the node at once and at every restart.
		{Type: pb.MsgSnap.Enum(), From: new(uint64(2)), To: new(uint64(1)), Term: new(uint64(3)),
			Snapshot: &pb.Snapshot{Data: []byte("\x07junk"), Metadata: &pb.SnapshotMetadata{Index: new(uint64(5)), Term: new(uint64(2))}}},
	}
	for i, m := range bad {
		if _, err := decodeFrameMessages(&raftFrame{From: 2, To: 1, Msgs: [][]byte{msg(m)}}, 1); !errors.Is(err, errBadMessage) {
			t.Fatalf("bad message %d accepted: %v", i, err)
		}
	}
	if _, err := decodeFrameMessages(&raftFrame{From: 2, To: 1, Msgs: [][]byte{{0xff, 0xff}}}, 1); !errors.Is(err, errBadMessage) {
		t.Fatalf("garbage accepted: %v", err)
	}
}

func FuzzDecodeEnvelope(f *testing.F) {
	f.Add(encodeEnvelope(proposalID{1, 2}, []byte("payload")))
	f.Add([]byte{1, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		id, payload, err := decodeEnvelope(b)
		if err != nil {
			return
		}
		if again := encodeEnvelope(id, payload); len(again) > len(b) {
			t.Fatalf("re-encoding grew: %x -> %x", b, again)
		}
	})
}

func FuzzDecodeSnapshotData(f *testing.F) {
	f.Add(encodeSnapshotData(snapshotData{peers: map[uint64]string{1: "a:1", 2: "b:2"}, sm: []byte("sm")}))
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := decodeSnapshotData(b)
		if err != nil {
			return
		}
		got, err := decodeSnapshotData(encodeSnapshotData(d))
		if err != nil || len(got.peers) != len(d.peers) || !bytes.Equal(got.sm, d.sm) {
			t.Fatalf("re-decode: %v", err)
		}
	})
}

func FuzzDecodeHardState(f *testing.F) {
	f.Add(encodeHardState(&pb.HardState{Term: new(uint64(2)), Vote: new(uint64(1)), Commit: new(uint64(9))}))
	f.Add([]byte(hardStateMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		hs, err := decodeHardState(b)
		if err == nil && !bytes.Equal(encodeHardState(hs), b) {
			t.Fatalf("accepted a non-canonical hard state %x", b)
		}
	})
}

func FuzzDecodeSnapFile(f *testing.F) {
	b, _ := encodeSnapFile(&pb.Snapshot{Metadata: &pb.SnapshotMetadata{Index: new(uint64(3)), Term: new(uint64(1)),
		ConfState: &pb.ConfState{Voters: []uint64{1}}}, Data: []byte("d")})
	f.Add(b)
	f.Add([]byte(snapMagic + "\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeSnapFile(b)
		if err == nil && s.GetMetadata().GetIndex() == 0 {
			t.Fatal("accepted index 0")
		}
	})
}

func FuzzDecodeEntryRecord(f *testing.F) {
	f.Add(encodeEntryKey(&pb.Entry{Type: pb.EntryConfChange.Enum(), Term: new(uint64(5))}), []byte("v"))
	f.Add([]byte{1, 0, 0xff}, []byte(nil))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		e, err := decodeEntryRecord(11, key, value)
		if err != nil {
			return
		}
		if e.GetIndex() != 11 || !bytes.Equal(e.GetData(), value) {
			t.Fatalf("decoded %v", e)
		}
	})
}

// FuzzRaftFrame feeds arbitrary frame bodies through the inbound path: quic's
// bounded msgpack decoding, then the protobuf messages and their checks.
func FuzzRaftFrame(f *testing.F) {
	app, _ := proto.Marshal(&pb.Message{Type: pb.MsgApp.Enum(), From: new(uint64(2)), To: new(uint64(1)),
		Term: new(uint64(2)), Index: new(uint64(1)), Entries: []*pb.Entry{{Index: new(uint64(2)), Term: new(uint64(2))}}})
	hb, _ := proto.Marshal(&pb.Message{Type: pb.MsgHeartbeat.Enum(), From: new(uint64(2)), To: new(uint64(1))})
	snap, _ := proto.Marshal(&pb.Message{Type: pb.MsgSnap.Enum(), From: new(uint64(2)), To: new(uint64(1)), Term: new(uint64(3)),
		Snapshot: &pb.Snapshot{Data: encodeSnapshotData(snapshotData{peers: map[uint64]string{2: "b"}, sm: []byte("image")}),
			Metadata: &pb.SnapshotMetadata{Index: new(uint64(5)), Term: new(uint64(2))}}})
	for _, fr := range []*raftFrame{{From: 2, To: 1, Msgs: [][]byte{app, hb}}, {From: 2, To: 1}, {From: 1, To: 2}, {From: 2, To: 1, Msgs: [][]byte{snap}}} {
		f.Add(mustMsgpack(f, fr))
	}
	f.Add([]byte{0xdd, 0xff, 0xff, 0xff, 0xff}) // array32 claiming 4G items
	f.Fuzz(func(t *testing.T, body []byte) {
		var fr raftFrame
		if err := (quic.Frame{Type: FrameType, Body: body}).Decode(&fr); err != nil {
			return
		}
		msgs, err := decodeFrameMessages(&fr, 1)
		if err != nil {
			return
		}
		for _, m := range msgs {
			if m.GetTo() != 1 || m.GetFrom() != fr.From {
				t.Fatalf("accepted %v", m)
			}
		}
	})
}

func mustMsgpack(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// A snapshot envelope announcing 65536 peers in four bytes is refused before
// a map is sized for them: every peer takes at least two bytes (id, address
// length), so the count is bounded by what follows it.
func TestDecodeSnapshotDataBoundsPeerCountByInput(t *testing.T) {
	b := []byte{envelopeV1, 0x80, 0x80, 0x04} // uvarint 65536 = maxSnapshotPeers
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 10 {
		if _, err := decodeSnapshotData(b); !errors.Is(err, errBadEnvelope) {
			t.Fatalf("accepted: %v", err)
		}
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 64<<10 {
		t.Fatalf("10 decodes of a 4-byte envelope allocated %d bytes", n)
	}
}
