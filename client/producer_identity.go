package client

import "math"

// producerIdentity is what a partition's batches are numbered under: a
// producer id and epoch. Every replica keeps, per producer id, the state of
// its newest epoch only; a batch of a newer epoch must start at sequence 0
// and a batch of an older one is refused (InvalidProducerEpoch).
type producerIdentity struct {
	pid   int64
	epoch int16
}

// noIdentity is the identity of a partition before it has a producer id.
var noIdentity = producerIdentity{pid: -1, epoch: -1}

// bumped is the identity a partition restarts its sequence under after a
// gap (renewIdentity): the next epoch of the same producer id, which no
// replica has seen a batch of on this partition, so that sequence 0 is
// accepted whether or not the replica still remembers the old epoch, and
// never taken for a retry of the old epoch's first batches (a replica that
// remembers them would answer a restarted sequence under the old epoch as a
// duplicate, with the old batch's offsets). This is Kafka's idempotent
// producer's local epoch bump (KIP-360): no round trip. It returns false
// when the epoch is exhausted: the partition then needs a fresh producer id.
func (id producerIdentity) bumped() (producerIdentity, bool) {
	if id.pid < 0 || id.epoch < 0 || id.epoch == math.MaxInt16 {
		return id, false
	}
	return producerIdentity{pid: id.pid, epoch: id.epoch + 1}, true
}
