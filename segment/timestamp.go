package segment

// OffsetForTimestamp returns the first offset whose timestamp is >= ts, or -1.
func (l *Log) OffsetForTimestamp(ts int64) (int64, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.mu.closed {
		return -1, ErrClosed
	}
	for _, s := range l.mu.segs {
		if s.maxTs < ts || s.next <= l.mu.logStart {
			continue
		}
		pos := l.indexedPos(s, s.base+s.tidx.lookup(ts))
		var it Records
		for pos < s.size {
			b, err := nextBatch(s.mp.data[:s.size], int(pos))
			if err != nil {
				return -1, s.corruptAt(pos, -1, err)
			}
			pos += int64(len(b))
			if b.MaxTimestamp() < ts || b.LastOffset() < l.mu.logStart {
				continue
			}
			it.Reset(b)
			for it.Next() {
				r := it.Record()
				if r.Timestamp >= ts && r.Offset >= l.mu.logStart {
					return r.Offset, nil
				}
			}
			if err := it.Err(); err != nil {
				return -1, &CorruptionError{File: s.logPath, Position: pos - int64(len(b)), Offset: b.BaseOffset(), Err: err}
			}
		}
	}
	return -1, nil
}
