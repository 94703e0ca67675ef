package bench

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Payload kinds (--payload): what the throughput benchmark's record values
// hold after the bench header.
const (
	// PayloadRandom is random bytes, distinct in every record of a batch:
	// incompressible, so a compressed producer sends its batches as they
	// are (the Builder keeps a batch that does not shrink uncompressed).
	PayloadRandom = "random"
	// PayloadPayments is JSON payment events (payments.go): what a payment
	// service sends, and what --compression is for.
	PayloadPayments = "payments"
)

// parsePayloadKind checks a --payload value.
func parsePayloadKind(s string) (string, error) {
	switch k := strings.ToLower(strings.TrimSpace(s)); k {
	case PayloadRandom, PayloadPayments:
		return k, nil
	}
	return "", fmt.Errorf("unknown payload %q (want random or payments)", s)
}

// bodies are the record value bytes after the bench header: body(i) is the
// i-th body, of the size newBodies was given. They are made before a load
// starts, so that making them costs the measured run nothing, and are read
// by every producer at once: body returns a slice to copy, never to change.
type bodies interface {
	body(i uint64) []byte
}

// Pools are bounded by bytes as well as by count: a few thousand bodies
// of a large --record-size would be gigabytes.
const (
	bodyPoolBytes = 32 << 20
	bodyPoolMax   = 4096
	bodyPoolMin   = 16
)

// newBodies makes the bodies of kind (PayloadRandom or PayloadPayments),
// each size bytes. The bodies are the same on every run (fixed seeds).
func newBodies(kind string, size int) (bodies, error) {
	rng := rand.New(rand.NewPCG(0x9e3779b97f4a7c15, uint64(size)))
	switch kind {
	case PayloadRandom:
		return newRandomBodies(rng, size), nil
	case PayloadPayments:
		n := max(bodyPoolMin, min(bodyPoolMax, bodyPoolBytes/max(size, 1)))
		pool := make(poolBodies, n)
		g := newPaymentGen(rng)
		for i := range pool {
			pool[i] = g.event(i, size)
		}
		return pool, nil
	}
	return nil, fmt.Errorf("bench: unknown payload %q", kind)
}

// randomBodies are windows of one buffer of random bytes, body i starting
// size bytes after body i-1's: the bodies of a batch (at most 1 MiB by
// default, the buffer at least 32 MiB) never repeat one another, so a
// compressor finds nothing to take.
type randomBodies struct {
	buf  []byte
	size int
}

func newRandomBodies(rng *rand.Rand, size int) *randomBodies {
	buf := make([]byte, max(bodyPoolBytes, 2*size))
	for i := 0; i+8 <= len(buf); i += 8 {
		v := rng.Uint64()
		for j := range 8 {
			buf[i+j] = byte(v >> (8 * j))
		}
	}
	return &randomBodies{buf: buf, size: size}
}

func (r *randomBodies) body(i uint64) []byte {
	room := uint64(len(r.buf) - r.size + 1)
	off := (i * uint64(r.size)) % room
	return r.buf[off : off+uint64(r.size)]
}

// poolBodies repeat a pool of bodies: body i is pool[i mod len].
type poolBodies [][]byte

func (p poolBodies) body(i uint64) []byte { return p[i%uint64(len(p))] }
