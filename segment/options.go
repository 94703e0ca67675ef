package segment

import (
	"fmt"
	"log/slog"
	"math"
	"time"
)

// Defaults for zero Options fields.
const (
	DefaultSegmentBytes  = 1 << 30
	DefaultIndexInterval = 4096
	DefaultMaxIndexBytes = 10 << 20
	DefaultRollAge       = 7 * 24 * time.Hour
	DefaultMaxBatchBytes = 16<<20 - 1<<10
	DefaultSyncInterval  = 200 * time.Millisecond
	DefaultCacheBytes    = 16 << 20
	// DefaultActivePointBytes: see Options.ActivePointBytes. Each point
	// costs four fsyncs (two index files, the checkpoint, its directory);
	// every 8 MiB they took ~8% of the cluster's throughput at full load,
	// every 32 MiB a crash restart scans up to ~30 ms more per partition
	// (README, Performance).
	DefaultActivePointBytes = 32 << 20
	// MaxSegmentBytes bounds a segment so that positions fit the index's uint32.
	MaxSegmentBytes = math.MaxInt32
)

// Options configure a Log. Zero fields take the documented defaults.
type Options struct {
	SegmentBytes   int64         // default 1 GiB; at most MaxSegmentBytes
	IndexInterval  int           // default 4096
	MaxIndexBytes  int           // default 10 MiB
	RollAge        time.Duration // default 7 days; 0 = default, <0 = never
	RetentionBytes int64         // default -1 (unlimited)
	RetentionAge   time.Duration // default -1 (unlimited)
	MaxBatchBytes  int           // default 16 MiB - 1 KiB; larger appends fail with ErrRecordTooLarge
	Sync           SyncPolicy
	SyncInterval   time.Duration // default 200ms for SyncInterval
	InitialOffset  int64         // the log start offset of a brand new log (raftnode uses 1)
	FS             FS            // default the OS
	Logger         *slog.Logger
	Now            func() time.Time
	// TruncateOnCorruption makes Open truncate at a corrupt batch in a sealed
	// segment (logging it) instead of failing with a *CorruptionError.
	TruncateOnCorruption bool
	// RepairCorruption makes Open, at a corrupt batch in a sealed segment,
	// set aside what the truncation takes out (quarantine.go), truncate
	// there and report the log torn (TornAtOpen), as it repairs a scrub's
	// mark, instead of failing with a *CorruptionError. Under SyncAlways
	// such a batch is damage on the disk, not a crash's unflushed tail: the
	// replica fetches the rest again and nothing is destroyed.
	RepairCorruption bool
	// OnFailure, if set, is called once when the log fails (see Log.Failed),
	// with the log's directory and the error. It may run with the log's
	// locks held: it must return at once and not call into the log.
	OnFailure func(dir string, err error)
	// OnFlush, if set, is called after each group-commit flush that wrote
	// bytes (WaitDurable, Sync, the SyncInterval flusher), with how long the
	// flush took (fsyncs of sealed segments and the msync of the active one)
	// and the active segment's bytes it covered: once per flush, not per
	// record (for /metrics). It runs on the flushing goroutine and must
	// return at once.
	OnFlush func(took time.Duration, bytes int64)
	// CacheBytes is how much of the active segment's end stays in the page
	// cache after a flush; durable bytes before it are dropped from the
	// cache (pagecache.go). Default DefaultCacheBytes; < 0: never drop.
	CacheBytes int64
	// OnCacheDrop, if set, is called after each page cache drop with the
	// bytes it covered (for /metrics). It runs on the flushing goroutine
	// and must return at once.
	OnCacheDrop func(bytes int64)
	// ActivePointBytes is how many durable bytes the active segment gains
	// between two writes of its recovery point (activepoint.go): after an
	// unclean shutdown Open scans only what follows it, about this much
	// plus what was not yet flushed, instead of the whole active segment.
	// Default DefaultActivePointBytes, or an eighth of SegmentBytes (at
	// least 64 KiB) if less; < 0: never written (a full scan).
	ActivePointBytes int64
	// OnDiskFull, if set, is called whenever an append (Append,
	// AppendVerbatim) fails with ErrDiskFull, with the log's directory and
	// the error. Like OnFailure it may run with the log's locks held.
	OnDiskFull func(dir string, err error)
}

func (o Options) withDefaults() (Options, error) {
	if o.SegmentBytes == 0 {
		o.SegmentBytes = DefaultSegmentBytes
	}
	if o.IndexInterval == 0 {
		o.IndexInterval = DefaultIndexInterval
	}
	if o.MaxIndexBytes == 0 {
		o.MaxIndexBytes = DefaultMaxIndexBytes
	}
	if o.RollAge == 0 {
		o.RollAge = DefaultRollAge
	}
	if o.RetentionBytes == 0 {
		o.RetentionBytes = -1
	}
	if o.RetentionAge == 0 {
		o.RetentionAge = -1
	}
	if o.MaxBatchBytes == 0 {
		o.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if o.CacheBytes == 0 {
		o.CacheBytes = DefaultCacheBytes
	}
	if o.ActivePointBytes == 0 {
		o.ActivePointBytes = min(DefaultActivePointBytes, max(o.SegmentBytes/8, 64<<10))
	}
	if o.SyncInterval == 0 {
		o.SyncInterval = DefaultSyncInterval
	}
	if o.FS == nil {
		o.FS = OSFS{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	switch {
	case o.SegmentBytes < HeaderSize || o.SegmentBytes > MaxSegmentBytes:
		return o, fmt.Errorf("segment: SegmentBytes %d out of range [%d, %d]", o.SegmentBytes, HeaderSize, MaxSegmentBytes)
	case o.IndexInterval < 0:
		return o, fmt.Errorf("segment: negative IndexInterval %d", o.IndexInterval)
	case o.MaxIndexBytes < 2*timeEntrySize:
		return o, fmt.Errorf("segment: MaxIndexBytes %d too small", o.MaxIndexBytes)
	case o.MaxBatchBytes < HeaderSize || o.MaxBatchBytes > MaxSegmentBytes:
		return o, fmt.Errorf("segment: MaxBatchBytes %d out of range", o.MaxBatchBytes)
	case o.Sync < SyncAlways || o.Sync > SyncNever:
		return o, fmt.Errorf("segment: unknown sync policy %d", o.Sync)
	case o.SyncInterval < 0:
		return o, fmt.Errorf("segment: negative SyncInterval %v", o.SyncInterval)
	case o.InitialOffset < 0:
		return o, fmt.Errorf("segment: negative InitialOffset %d", o.InitialOffset)
	}
	return o, nil
}
