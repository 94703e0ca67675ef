package client

import (
	"math/rand/v2"
	"sync"
)

// PartitionFunc picks a partition in [0, n) for a record. A ProducerConfig
// may set one to replace the default partitioner.
type PartitionFunc func(topic string, key []byte, n int32) int32

// Murmur2 is Kafka's murmur2 hash (seed 0x9747b28c), bit for bit as in the
// Java client's Utils.murmur2, so keyed records land on the same partition as
// a Kafka producer would put them.
func Murmur2(data []byte) int32 {
	const (
		seed = uint32(0x9747b28c)
		m    = uint32(0x5bd1e995)
		r    = 24
	)
	n := len(data)
	h := seed ^ uint32(n)
	for i := 0; i+4 <= n; i += 4 {
		k := uint32(data[i]) | uint32(data[i+1])<<8 | uint32(data[i+2])<<16 | uint32(data[i+3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	tail := data[n&^3:]
	switch len(tail) {
	case 3:
		h ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(tail[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}

// KeyPartition is the default partition of a keyed record:
// toPositive(murmur2(key)) mod n, as Kafka computes it.
func KeyPartition(key []byte, n int32) int32 {
	return (Murmur2(key) & 0x7fffffff) % n
}

// sticky assigns unkeyed records: every record goes to the topic's current
// partition until batchBytes worth of records went there, then the next
// partition (round-robin from a random start) takes over.
type sticky struct {
	batchBytes int
	mu         struct {
		sync.Mutex
		topics map[string]*stickyState
	}
}

type stickyState struct {
	part  int32
	bytes int
}

func newSticky(batchBytes int) *sticky {
	s := &sticky{batchBytes: batchBytes}
	s.mu.topics = map[string]*stickyState{}
	return s
}

func (s *sticky) pick(topic string, size int, n int32) int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.mu.topics[topic]
	if !ok {
		st = &stickyState{part: rand.Int32N(n)}
		s.mu.topics[topic] = st
	}
	if st.part >= n {
		st.part = 0
	}
	if st.bytes > 0 && st.bytes+size > s.batchBytes {
		st.part = (st.part + 1) % n
		st.bytes = 0
	}
	st.bytes += size
	return st.part
}
