package quic

import (
	"sync"
	"sync/atomic"
)

// joinMax is the largest frame whose parts are copied into one buffer and
// handed to the stream in one Write (joinParts). A frame written in several
// parts (header and msgpack bytes around out-of-line chunks: a produce
// request's batch, a fetch answer's records) costs quic-go a stall at each
// part boundary: its Write returns only once the packer has taken the part,
// so the part's last packet leaves short, in a train (sendmsg) of its own,
// the writer parks and wakes, and the small part that follows goes in one
// more packet, which the peer receives, decrypts and acknowledges on its
// own. Joined, the frame leaves as full packets in as few trains as the
// packer makes. BenchmarkJoinedParts (one process, both ends; a small
// prefix, the chunk, a small tail; the process's CPU per echo, both
// directions), two runs each, joined against in parts: at GOMAXPROCS 1 (a
// node's in the bench's cluster) a 32 KiB chunk 211–218 against 235–240 µs,
// 150 KiB 849–893 against 854–921, 700 KiB 3223–3752 against 3212–3703
// (there the copy costs what the boundaries save); at GOMAXPROCS 2 305–331
// against 359–390, 1282–1295 against 1337–1351, 5742–6163 against
// 5913–6245. Hence 256 KiB.
const joinMax = 256 << 10

// joinLimit is joinMax; BenchmarkJoinedParts sets it to 0 to write in parts.
var joinLimit atomic.Int64

func init() { joinLimit.Store(joinMax) }

// joined is a frame's parts copied into one pooled buffer.
type joined struct {
	buf []byte
	one [1][]byte
}

var joinedPool = sync.Pool{New: func() any { return new(joined) }}

// joinParts returns parts as one part (a view of a pooled buffer) when there
// are several and they total at most joinLimit, with the buffer to release
// once the write is done; otherwise parts itself and nil (whose release does
// nothing).
func joinParts(parts [][]byte) ([][]byte, *joined) {
	if len(parts) < 2 {
		return parts, nil
	}
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	if n > int(joinLimit.Load()) {
		return parts, nil
	}
	j := joinedPool.Get().(*joined)
	if cap(j.buf) < n {
		j.buf = make([]byte, 0, max(n, 4<<10))
	}
	j.buf = j.buf[:0]
	for _, p := range parts {
		j.buf = append(j.buf, p...)
	}
	j.one[0] = j.buf
	return j.one[:], j
}

// release returns the buffer to the pool; nil does nothing.
func (j *joined) release() {
	if j == nil {
		return
	}
	j.one[0] = nil
	joinedPool.Put(j)
}
