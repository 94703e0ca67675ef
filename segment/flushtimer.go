package segment

import "time"

// flushTimer times one group-commit flush for Options.OnFlush: one clock
// read when the flush starts and one when it ends, nothing when OnFlush is
// unset.
type flushTimer struct {
	fn    func(time.Duration, int64)
	start time.Time
}

func (l *Log) startFlushTimer() flushTimer {
	if l.opts.OnFlush == nil {
		return flushTimer{}
	}
	return flushTimer{fn: l.opts.OnFlush, start: time.Now()}
}

// done reports a flush that covered bytes of the active segment.
func (t flushTimer) done(bytes int64) {
	if t.fn != nil {
		t.fn(time.Since(t.start), bytes)
	}
}
