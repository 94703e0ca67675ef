package segment

// LatestEpoch is the epoch of the last batch in the log (-1 if empty).
func (l *Log) LatestEpoch() int32 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.epochs.latest()
}

// EndOffsetForEpoch answers KIP-101's OffsetsForLeaderEpoch: the largest epoch
// <= epoch that the log knows and the start offset of the next higher epoch (or
// the log end offset if it is the latest). Returns (-1, -1) if the log knows
// no epoch <= epoch (including when it is empty).
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.epochs.endOffsetFor(epoch, l.mu.leo)
}

// Epochs returns a copy of the leader-epoch cache.
func (l *Log) Epochs() []EpochEntry {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.epochs.clone()
}
