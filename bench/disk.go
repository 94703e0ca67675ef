package bench

import (
	"context"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"paymentlog/segment"
)

// DiskResult is the raw disk baseline: one writer appending to a fresh file
// in the directory the local cluster's data goes to, as a log with --fsync
// always does at full load (a large group commit per write: pwrite of
// ChunkB, then fdatasync), with no replication, framing or index. MBPerSec
// drops the durable pages more than 16 MiB behind from the page cache, as
// the nodes do (segment.Options.CacheBytes); LeftCachedMBPerSec leaves
// them to the OS, which on a VM whose balloon reports free pages to the host
// pays a host fault for every fresh page (segment/pagecache.go): the gap
// between the two is that cost on this machine, now.
type DiskResult struct {
	MBPerSec           float64   `json:"mb_per_sec"` // median of the rounds
	Rounds             []float64 `json:"rounds_mb_per_sec"`
	LeftCachedMBPerSec float64   `json:"left_cached_mb_per_sec"` // median
	LeftCachedRounds   []float64 `json:"left_cached_rounds_mb_per_sec"`
	ChunkB             int       `json:"chunk_bytes"`
	RoundMs            float64   `json:"round_ms"`
	Dir                string    `json:"dir"`
}

const (
	diskChunk     = 256 << 10
	diskKeep      = segment.DefaultCacheBytes
	diskDropStep  = 1 << 20
	diskFileBytes = 4 << 30 // the file wraps around at this size
)

// runDisk measures the raw disk baseline in dir (the OS temp dir when
// empty): rounds rounds of d each, alternating dropping and leaving the
// page cache.
func runDisk(ctx context.Context, dir string, d time.Duration, rounds int, progress func(done, total int)) (DiskResult, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	res := DiskResult{ChunkB: diskChunk, RoundMs: ms(d), Dir: dir}
	for i := 0; i < rounds && ctx.Err() == nil; i++ {
		for _, drop := range []bool{true, false} {
			v, err := diskRound(ctx, dir, d, drop)
			if err != nil {
				return res, fmt.Errorf("bench: disk: %w", err)
			}
			if drop {
				res.Rounds = append(res.Rounds, v)
			} else {
				res.LeftCachedRounds = append(res.LeftCachedRounds, v)
			}
		}
		if progress != nil {
			progress(i+1, rounds)
		}
	}
	res.MBPerSec, res.LeftCachedMBPerSec = medianOf(res.Rounds), medianOf(res.LeftCachedRounds)
	return res, ctx.Err()
}

// diskRound writes for d and returns MB/s (10^6 bytes/s) made durable.
func diskRound(ctx context.Context, dir string, d time.Duration, drop bool) (float64, error) {
	f, err := os.CreateTemp(dir, "paymentlog-bench-disk-")
	if err != nil {
		return 0, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := f.Truncate(diskFileBytes); err != nil {
		return 0, err
	}
	buf := make([]byte, diskChunk)
	for i := range buf {
		buf[i] = byte(i*7 + i>>8)
	}
	fd := int(f.Fd())
	var off, dropped, written int64
	start := time.Now()
	deadline := start.Add(d)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if off+diskChunk > diskFileBytes {
			off, dropped = 0, 0
		}
		if _, err := f.WriteAt(buf, off); err != nil {
			return 0, err
		}
		if err := unix.Fdatasync(fd); err != nil {
			return 0, err
		}
		off += diskChunk
		written += diskChunk
		if upto := off - diskKeep; drop && upto-dropped >= diskDropStep {
			_ = unix.Fadvise(fd, dropped, upto-dropped, unix.FADV_DONTNEED)
			dropped = upto
		}
	}
	return float64(written) / time.Since(start).Seconds() / 1e6, nil
}
