package segment

import (
	"context"
	"fmt"
)

// background flushes on the interval (SyncInterval) and makes segments sealed
// under SyncNever durable, advancing the recovery point.
func (l *Log) background(tick <-chan struct{}) {
	defer close(l.bgDone)
	for {
		select {
		case <-l.bgStop:
			return
		case <-tick:
			_ = l.Sync(context.Background())
		case <-l.bgKick:
			if err := l.flushPending(); err != nil {
				continue
			}
			l.appendMu.Lock()
			if l.writableLocked() == nil {
				rp := l.active().base
				l.pendingMu.Lock()
				for _, s := range l.pending {
					rp = min(rp, s.base)
				}
				for _, s := range l.syncing {
					rp = min(rp, s.base)
				}
				l.pendingMu.Unlock()
				if err := l.setRecoveryPointLocked(rp); err != nil {
					l.fail(err)
				}
			}
			l.appendMu.Unlock()
		}
	}
}

// stopBackground stops the background goroutine, if any, and waits for it to
// exit. Safe to call from several goroutines at once.
func (l *Log) stopBackground() {
	if l.bgStop == nil {
		return
	}
	l.bgStopOnce.Do(func() { close(l.bgStop) })
	<-l.bgDone
}

// Close flushes, writes the clean-shutdown marker and unmaps everything once
// no view references remain. Later calls return ErrClosed. Close may be called
// from several goroutines at once: one of them closes the log, the others
// return ErrClosed.
func (l *Log) Close() error {
	l.mu.RLock()
	closed := l.mu.closed
	l.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	l.stopBackground()
	// After a deletion in progress: its files are gone before the marker.
	l.deleteMu.Lock()
	defer l.deleteMu.Unlock()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.mu.closed {
		return ErrClosed
	}
	l.closePoint()
	var err error
	if l.failErr() == nil {
		err = l.flushPending()
		if err == nil {
			err = l.trimLocked(l.active(), true)
		}
		if err == nil && l.epochsStale {
			err = l.saveEpochsLocked(l.mu.epochs.encode())
			if err == nil && l.epochsStale {
				// No clean marker: the next open rebuilds the cache from the
				// segments it scans instead of trusting the stale file.
				err = fmt.Errorf("%w: leader-epoch checkpoint still stale at close; the next open rebuilds it", ErrDiskFull)
			}
		}
		if err == nil {
			err = l.writeCleanMarker()
		}
	}
	l.mu.Lock()
	l.mu.closed = true
	segs := l.mu.segs
	l.mu.Unlock()
	for _, s := range segs {
		s.closeFiles()
	}
	return err
}

func (l *Log) writeCleanMarker() error {
	f, err := l.fs.OpenFile(join(l.dir, cleanShutdownFile), osCreate, 0o644)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return l.fs.SyncDir(l.dir)
}
