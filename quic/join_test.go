package quic

import (
	"bytes"
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"paymentlog/wire"
)

func TestJoinParts(t *testing.T) {
	// One part, or more than joinMax in all: written as they are.
	one := [][]byte{[]byte("abc")}
	if got, j := joinParts(one); &got[0] != &one[0] || j != nil {
		t.Fatal("a single part was copied")
	}
	big := [][]byte{make([]byte, joinMax), []byte("x")}
	if got, j := joinParts(big); len(got) != 2 || j != nil {
		t.Fatalf("%d parts over joinMax came back as %d", len(big), len(got))
	}
	// Several small parts: one, their bytes in order; the buffer goes back
	// to the pool and a later join does not disturb an earlier one's bytes
	// while it is held.
	parts := [][]byte{[]byte("head"), {}, pattern(OutOfLineBytes, 1), []byte("tail")}
	want := bytes.Join(parts, nil)
	got, j := joinParts(parts)
	if len(got) != 1 || !bytes.Equal(got[0], want) {
		t.Fatalf("joined %d parts into %d, equal %v", len(parts), len(got), len(got) == 1 && bytes.Equal(got[0], want))
	}
	other, jOther := joinParts([][]byte{[]byte("other"), []byte("frame")})
	if !bytes.Equal(got[0], want) || string(other[0]) != "otherframe" {
		t.Fatal("a second join changed the first one's bytes")
	}
	jOther.release()
	j.release()
}

type joinedEcho struct {
	Topic string     `msgpack:"t"`
	Batch wire.Bytes `msgpack:"b"`
	Tail  int64      `msgpack:"x"`
}

// BenchmarkJoinedParts: unary echoes of a frame shaped like a produce
// request or a fetch answer (a small prefix, an out-of-line chunk, a small
// tail), alternating rounds of 100 written joined (whatever the size) and
// in parts (joinLimit 0), and reports the process's CPU per echo (both ends, both directions)
// for each: what joinMax is chosen by. Run it with -cpu 1 as well (a node's
// GOMAXPROCS in the bench's local cluster).
func BenchmarkJoinedParts(b *testing.B) {
	defer joinLimit.Store(joinMax)
	for _, size := range []int{32 << 10, 150 << 10, 700 << 10} {
		b.Run(fmt.Sprintf("chunk=%dKiB", size>>10), func(b *testing.B) {
			srv := mustServe(b, Config{})
			srv.Handle(typeBytes, func(ctx context.Context, p Peer, req Frame) (FrameType, any, error) {
				var m joinedEcho
				if err := req.Decode(&m); err != nil {
					return 0, nil, err
				}
				return typeBytes, &m, nil
			})
			cli := mustClient(b, Config{})
			req := &joinedEcho{Topic: "payments", Batch: make([]byte, size), Tail: 7}
			ctx := context.Background()
			call := func() {
				var resp joinedEcho
				if err := cli.Call(ctx, srv.Addr(), typeBytes, req, &resp); err != nil {
					b.Fatal(err)
				}
			}
			for range 200 {
				call()
			}
			const round = 100
			var cpu [2]time.Duration
			var n [2]int
			b.ResetTimer()
			for i := 0; i < b.N; i += round {
				mode := (i / round) % 2 // 0 joined, 1 in parts
				joinLimit.Store(int64((1 << 30) * (1 - mode)))
				start := processCPU()
				for range round {
					call()
				}
				cpu[mode] += processCPU() - start
				n[mode] += round
			}
			b.StopTimer()
			joinLimit.Store(joinMax)
			b.ReportMetric(float64(cpu[0].Microseconds())/float64(max(n[0], 1)), "joined_cpu_us")
			b.ReportMetric(float64(cpu[1].Microseconds())/float64(max(n[1], 1)), "parts_cpu_us")
		})
	}
}

// processCPU is the process's user and system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
