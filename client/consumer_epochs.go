package client

import (
	"sort"
	"time"

	"paymentlog/wire"
)

type cpart struct {
	tp        TopicPartition
	pos       int64 // next offset to return; SeekBeginning/SeekEnd while a seek is pending
	gen       int   // bumped by Seek: answers to older fetches are dropped
	fetching  bool
	hw        int64 // highest high watermark fetches reported (-1 unknown)
	lso       int64
	failures  int
	behind    int // UnknownLeaderEpoch answers in a row from the leader the metadata names
	notBefore time.Time
	// preferred is the follower to read from (ConsumerConfig.Rack; 0:
	// the leader), until preferredUntil, for the leader epoch it was named
	// in (a new leader may name another).
	preferred      int32
	preferredUntil time.Time
	preferredEpoch int32
	// epochs is the leader-epoch history of the batches the position
	// passed since the partition was assigned or sought outside them: the
	// first offset passed in each epoch (a record returned, or one the log
	// cleaner removed). The last entry's epoch is the last fetched epoch
	// every fetch carries (KIP-320); none: -1.
	// Invariant: epochs and offsets strictly increase; every offset < pos.
	epochs []epochStart
}

// epochStart is where a leader epoch begins in the records returned.
type epochStart struct {
	epoch int32
	start int64
}

// lastEpoch is the leader epoch of the last batch passed (-1: unknown).
func (cp *cpart) lastEpoch() int32 {
	if len(cp.epochs) == 0 {
		return -1
	}
	return cp.epochs[len(cp.epochs)-1].epoch
}

// epochBefore is the leader epoch of the offset before off: known when
// off-1 is within the batches passed (-1 otherwise).
func (cp *cpart) epochBefore(off int64) int32 {
	if len(cp.epochs) == 0 || off > cp.pos || off-1 < cp.epochs[0].start {
		return -1
	}
	i := sort.Search(len(cp.epochs), func(i int) bool { return cp.epochs[i].start > off-1 })
	return cp.epochs[i-1].epoch
}

// entered records that the position moves into a batch of leader epoch
// epoch at offset start (decodeFetched calls it in offset order).
func (cp *cpart) entered(epoch int32, start int64) {
	if epoch < 0 {
		return
	}
	if n := len(cp.epochs); n == 0 || epoch > cp.epochs[n-1].epoch {
		cp.epochs = append(cp.epochs, epochStart{epoch, start})
	}
}

// seekEpochs keeps the history below offset when the seek stays within the
// records returned (offset-1 was returned, so the epoch it had is known),
// and forgets it otherwise.
func (cp *cpart) seekEpochs(offset int64) {
	if offset < 0 || cp.pos < 0 || offset > cp.pos || len(cp.epochs) == 0 || offset <= cp.epochs[0].start {
		cp.epochs = nil
		return
	}
	i := sort.Search(len(cp.epochs), func(i int) bool { return cp.epochs[i].start >= offset })
	cp.epochs = cp.epochs[:i]
}

// divergence is where the records returned part from a leader's log that
// answered a fetch at pos with d: the leader's end offset for d.Epoch,
// lowered to where the records returned left that epoch (a follower's
// truncation offset, replica.TruncationOffset): when the leader knows the
// epoch only as an older one than the consumer's last, its end offset may
// lie past the consumer's records of later epochs.
func (cp *cpart) divergence(pos int64, d wire.EpochEndOffset) int64 {
	end := min(d.EndOffset, pos)
	if d.Epoch < 0 || len(cp.epochs) == 0 {
		return max(end, 0)
	}
	i := sort.Search(len(cp.epochs), func(i int) bool { return cp.epochs[i].epoch > d.Epoch })
	switch {
	case i == 0:
		// Every record returned is of a later epoch than any the
		// leader knows up to ours: they all part from its log.
		end = min(end, cp.epochs[0].start)
	case i < len(cp.epochs):
		end = min(end, cp.epochs[i].start)
	}
	return max(end, 0)
}
