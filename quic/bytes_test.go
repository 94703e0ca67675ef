package quic

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"paymentlog/wire"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

const typeBytes FrameType = 40

var errTestHandler = errors.New("handler says no")

// bytesEcho mirrors echoMsg with a wire.Bytes field under the same tag.
type bytesEcho struct {
	N    int64      `msgpack:"n"`
	S    string     `msgpack:"s"`
	Data wire.Bytes `msgpack:"data"`
}

type bytesMsg struct {
	N    int64       `msgpack:"n"`
	S    string      `msgpack:"s"`
	Data wire.Bytes  `msgpack:"data"`
	More []bytesPart `msgpack:"more"`
}

type bytesPart struct {
	P    int32      `msgpack:"p"`
	Data wire.Bytes `msgpack:"data"`
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) + seed
	}
	return b
}

func TestBytesWireFormatMatchesByteSlice(t *testing.T) {
	for _, n := range []int{-1, 0, 1, 300, OutOfLineBytes - 1, OutOfLineBytes, 3*OutOfLineBytes + 5} {
		var data []byte
		if n >= 0 {
			data = pattern(n, byte(n))
		}
		want := encodeFrame(t, 1, echoMsg{N: 3, S: "x", Data: data})
		e := getEncoder()
		parts, err := e.frameParts(1, bytesEcho{N: 3, S: "x", Data: wire.Bytes(data)}, DefaultMaxFrameSize)
		if err != nil {
			t.Fatal(err)
		}
		got := bytes.Join(parts, nil)
		outOfLine := false
		for _, p := range parts {
			outOfLine = outOfLine || len(p) > 0 && n > 0 && &p[0] == &data[0]
		}
		putEncoder(e)
		if !bytes.Equal(got, want) {
			t.Fatalf("n=%d: wire.Bytes frame differs from the []byte frame", n)
		}
		if outOfLine != (n >= OutOfLineBytes) {
			t.Fatalf("n=%d: written out of line: %v", n, outOfLine)
		}
		// Both directions decode.
		f := Frame{Type: 1, Body: want[frameHeaderLen:]}
		var bm bytesEcho
		var em echoMsg
		if err := f.Decode(&bm); err != nil || !bytes.Equal(bm.Data, data) || (data == nil) != (bm.Data == nil) {
			t.Fatalf("n=%d: wire.Bytes decode: %v (nil %v)", n, err, bm.Data == nil)
		}
		if err := f.Decode(&em); err != nil || !bytes.Equal(em.Data, data) {
			t.Fatalf("n=%d: []byte decode: %v", n, err)
		}
	}
}

func TestBytesDecodeCopiesOrAliases(t *testing.T) {
	body := encodeFrame(t, 1, bytesMsg{N: 1, Data: pattern(100, 1), More: []bytesPart{{P: 2, Data: pattern(50_000, 2)}}})[frameHeaderLen:]
	f := Frame{Type: 1, Body: body}
	var copied, aliased bytesMsg
	if err := f.Decode(&copied); err != nil {
		t.Fatal(err)
	}
	if err := f.DecodeNoCopy(&aliased); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(copied.More[0].Data, pattern(50_000, 2)) || !bytes.Equal(aliased.More[0].Data, pattern(50_000, 2)) {
		t.Fatal("decoded data differs")
	}
	clear(body)
	if !bytes.Equal(copied.Data, pattern(100, 1)) || !bytes.Equal(copied.More[0].Data, pattern(50_000, 2)) {
		t.Fatal("Decode kept references to Body")
	}
	if !bytes.Equal(aliased.Data, make([]byte, 100)) || !bytes.Equal(aliased.More[0].Data, make([]byte, 50_000)) {
		t.Fatal("DecodeNoCopy did not alias Body")
	}
	if cap(aliased.Data) != len(aliased.Data) {
		t.Fatal("an aliased wire.Bytes must not reach past its own bytes")
	}
}

func TestBytesThroughMsgpackItself(t *testing.T) {
	in := bytesMsg{N: 9, Data: pattern(70_000, 3), More: []bytesPart{{P: 1}, {P: 2, Data: wire.Bytes{}}}}
	b, err := msgpack.Marshal(&in)
	if err != nil {
		t.Fatal(err)
	}
	var out bytesMsg
	if err := msgpack.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Data, in.Data) || out.More[0].Data != nil || out.More[1].Data == nil || len(out.More[1].Data) != 0 {
		t.Fatalf("round trip through msgpack: %d bytes, %v", len(out.Data), out.More)
	}
	// A truncated input fails instead of allocating the announced length.
	if err := msgpack.Unmarshal(b[:len(b)/2], &out); err == nil {
		t.Fatal("truncated input decoded")
	}
}

// TestBytesOutOfLineOverStreams: frames with out-of-line chunks, written in
// parts (over joinMax) and joined into one write (under it), arrive whole.
func TestBytesOutOfLineOverStreams(t *testing.T) {
	for _, size := range []int{1<<20 + 17, joinMax / 2} {
		t.Run(fmt.Sprint(size), func(t *testing.T) { testBytesOutOfLineOverStreams(t, size) })
	}
}

func testBytesOutOfLineOverStreams(t *testing.T, size int) {
	srv := mustServe(t, Config{})
	srv.Handle(typeBytes, func(ctx context.Context, p Peer, req Frame) (FrameType, any, error) {
		var m bytesMsg
		if err := req.DecodeNoCopy(&m); err != nil {
			return 0, nil, err
		}
		return typeBytes, Reply{Body: m, Done: func() { clear(m.Data) }}, nil
	})
	cli := mustClient(t, Config{})
	ctx := context.Background()
	in := bytesMsg{N: 5, S: "big", Data: pattern(size, 4), More: []bytesPart{
		{P: 1, Data: pattern(10, 5)}, {P: 2, Data: pattern(OutOfLineBytes, 6)}, {P: 3}}}
	var out bytesMsg
	if err := cli.Call(ctx, srv.Addr(), typeBytes, in, &out); err != nil {
		t.Fatal(err)
	}
	if out.N != 5 || out.S != "big" || !bytes.Equal(out.Data, in.Data) || len(out.More) != 3 ||
		!bytes.Equal(out.More[1].Data, in.More[1].Data) || out.More[2].Data != nil {
		t.Fatalf("unary echo of out-of-line wire.Bytes differs")
	}
	// Sessions: the echo session answers the first frame as an echoMsg,
	// then sends every frame back as Raw (a large Raw is out of line too).
	s, err := cli.OpenSession(ctx, srv.Addr(), typeSession, in)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 3 {
		if i > 0 {
			in.N = int64(i)
			if err := s.Send(ctx, typeSession, in); err != nil {
				t.Fatal(err)
			}
		}
		f, err := s.Recv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var got bytesMsg
		if err := f.DecodeNoCopy(&got); err != nil || got.N != in.N || !bytes.Equal(got.Data, in.Data) ||
			(i > 0 && !bytes.Equal(got.More[1].Data, in.More[1].Data)) {
			t.Fatalf("session frame %d: %v", i, err)
		}
	}
}

func TestReplyDoneRunsOnError(t *testing.T) {
	srv := mustServe(t, Config{})
	done := make(chan struct{})
	srv.Handle(typeBytes, func(ctx context.Context, p Peer, req Frame) (FrameType, any, error) {
		return 0, Reply{Done: func() { close(done) }}, errTestHandler
	})
	cli := mustClient(t, Config{})
	if err := cli.Call(context.Background(), srv.Addr(), typeBytes, 1, nil); err == nil {
		t.Fatal("call succeeded")
	}
	<-done
}
