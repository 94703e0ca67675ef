package segment

import (
	"context"
	"time"
)

// Retention says which sealed segments a retention pass deletes (DeleteRetained).
// A negative Bytes or Age means no limit of that kind; zero deletes every
// sealed segment below Below.
type Retention struct {
	// Bytes keeps the newest segments whose total size (the active segment
	// included) stays within Bytes: the oldest sealed segment goes while
	// the log without it is still at least Bytes long (Kafka's
	// retention.bytes).
	Bytes int64
	// Age deletes a sealed segment whose largest record timestamp (its
	// time index) is older than Now minus Age (Kafka's retention.ms).
	Age time.Duration
	// Now is the time Age is measured from.
	Now time.Time
	// Below bounds the pass: only segments holding nothing at or above
	// this offset are deleted (a partition's high watermark).
	Below int64
}

// ApplyRetention deletes whole sealed segments by the log's
// Options.RetentionBytes and RetentionAge, below its log end: DeleteRetained
// with those limits, Options.Now and no other bound.
func (l *Log) ApplyRetention(ctx context.Context) (deleted int, err error) {
	if l.opts.RetentionBytes < 0 && l.opts.RetentionAge < 0 {
		return 0, ctx.Err()
	}
	deleted, _, err = l.DeleteRetained(ctx, Retention{Bytes: l.opts.RetentionBytes, Age: l.opts.RetentionAge,
		Now: l.opts.Now(), Below: l.LogEndOffset()})
	return deleted, err
}

// DeleteRetained deletes whole sealed segments, oldest first, while the
// oldest one is past r's size or age limit and wholly below r.Below; it
// stops at the first segment that is not (as Kafka does: retention never
// leaves a gap). The active segment is never deleted. The log start offset
// becomes the base offset of the first segment kept; it is returned with
// the number of segments deleted. The new log start is durable (the
// log-start checkpoint) before anyone can read it, and appends go on while
// the files are removed: see deleteFront.
func (l *Log) DeleteRetained(ctx context.Context, r Retention) (deleted int, logStart int64, err error) {
	if err := ctx.Err(); err != nil {
		return 0, l.LogStartOffset(), err
	}
	l.deleteMu.Lock()
	defer l.deleteMu.Unlock()
	l.appendMu.Lock()
	if err := l.writableLocked(); err != nil {
		l.appendMu.Unlock()
		return 0, l.LogStartOffset(), err
	}
	// Sealed segments stay as they are until deleteFront: only deletions
	// and truncations change them, and both take deleteMu.
	k, logStart := l.retentionPointLocked(r)
	l.appendMu.Unlock()
	if k == 0 {
		return 0, logStart, nil
	}
	deleted, err = l.deleteFront(logStart)
	return deleted, logStart, err
}

// RetentionPoint is the log start offset DeleteRetained(r) would leave and
// the number of segments it would delete, without deleting anything. A
// caller that serialises every change to the log can act on it (write
// state the deleted segments held elsewhere) and then call DeleteBefore
// with the offset.
func (l *Log) RetentionPoint(r Retention) (logStart int64, segments int) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	k, logStart := l.retentionPointLocked(r)
	return logStart, k
}

// retentionPointLocked: see RetentionPoint. appendMu held, which keeps
// the sealed segments' sizes, ends and timestamps still.
func (l *Log) retentionPointLocked(r Retention) (k int, logStart int64) {
	l.mu.Lock()
	segs := l.mu.segs
	logStart = l.mu.logStart
	l.mu.Unlock()
	bySize, byAge := r.Bytes >= 0, r.Age >= 0
	if !bySize && !byAge {
		return 0, logStart
	}
	now := r.Now.UnixMilli()
	var total int64
	for _, s := range segs {
		total += s.size
	}
	for ; k < len(segs)-1; k++ {
		s := segs[k]
		if s.next > r.Below {
			break
		}
		size := bySize && total-s.size >= r.Bytes
		age := byAge && now-s.maxTs > r.Age.Milliseconds()
		if !size && !age {
			break
		}
		total -= s.size
	}
	if k == 0 {
		return 0, logStart
	}
	return k, segs[k].base
}

// RollExpired seals the active segment when retention by age would delete
// it were it sealed: it holds a batch, nothing at or above r.Below, and
// its largest timestamp is older than r.Now minus r.Age. Retention never
// deletes the active segment, so without this the last records of a log
// no longer written would outlive retention.ms for good; Kafka rolls such
// a segment to delete it too. It reports whether it rolled.
func (l *Log) RollExpired(r Retention) (bool, error) {
	if r.Age < 0 {
		return false, nil
	}
	return l.rollActiveIf(func(s *segment) bool {
		return s.next <= r.Below && r.Now.UnixMilli()-s.maxTs > r.Age.Milliseconds()
	})
}
