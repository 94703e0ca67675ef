package segment

// Dirtiness is what a compaction pass with the same CompactOptions would
// find in the log now (Log.Dirtiness), for a cleaner that chooses which of
// its logs to clean first (Kafka's LogCleanerManager ranks its logs by
// this ratio, those past max.compaction.lag.ms first).
type Dirtiness struct {
	// CleanableBytes are the bytes of the sealed segments a pass may read
	// (cleanableSegments), DirtyBytes those of the ones among them holding
	// records at or above the cleaner point, and DirtyRatio the second's
	// share of the first (CompactResult.DirtyRatio; 0 when there is none).
	CleanableBytes, DirtyBytes int64
	DirtyRatio                 float64
	// Due: a pass would run (CompactResult.Ran): something is dirty at a
	// ratio of at least MinDirtyRatio, or it is Overdue, or a tombstone an
	// earlier pass kept is past DeleteRetention.
	Due bool
	// Overdue: the dirty records are older than MaxLag
	// (CompactResult.Overdue's rule).
	Overdue bool
	// FirstDirtyTimestamp is the largest timestamp of the first batch of
	// the first segment holding dirty records, in unix milliseconds (the
	// batch Overdue looks at); -1 when nothing is dirty or that batch does
	// not read (a pass then finds and reports the damage).
	FirstDirtyTimestamp int64
}

// Dirtiness reports, without reading more than one batch or writing
// anything, what a Compact with o would find now: only segment sizes, the
// cleaner checkpoints and the first dirty batch are looked at. It returns
// ErrCompactionRunning while a pass runs on the log (it never waits for
// one) and ErrClosed after Close.
func (l *Log) Dirtiness(o CompactOptions) (Dirtiness, error) {
	if !l.compactMu.TryLock() {
		return Dirtiness{}, ErrCompactionRunning
	}
	defer l.compactMu.Unlock()
	if o.Now.IsZero() {
		o.Now = l.opts.Now()
	}
	d := Dirtiness{FirstDirtyTimestamp: -1}
	segs, logStart, err := l.cleanableSegments(o)
	if err != nil {
		return d, err
	}
	defer func() {
		for _, c := range segs {
			c.mp.release()
		}
	}()
	if len(segs) == 0 {
		return d, nil
	}
	end := segs[len(segs)-1].next
	firstDirty := min(max(l.firstDirty(), logStart), end)
	for _, c := range segs {
		d.CleanableBytes += int64(len(c.data))
		if c.next > firstDirty {
			d.DirtyBytes += int64(len(c.data))
		}
	}
	if d.CleanableBytes > 0 {
		d.DirtyRatio = float64(d.DirtyBytes) / float64(d.CleanableBytes)
	}
	for _, c := range segs {
		if c.next <= firstDirty {
			continue
		}
		if b, err := c.batchAt(0); err == nil {
			d.FirstDirtyTimestamp = b.MaxTimestamp()
		}
		break
	}
	d.Overdue = d.DirtyBytes > 0 && overdue(segs, firstDirty, o)
	d.Due = (d.DirtyBytes > 0 && d.DirtyRatio >= o.MinDirtyRatio) || d.Overdue ||
		l.oldestTombstone() < msBefore(o.Now, o.DeleteRetention)
	return d, nil
}
