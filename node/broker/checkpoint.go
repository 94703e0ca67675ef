package broker

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"paymentlog/segment"
)

// The HW checkpoint ("replication-offset-checkpoint" in the data directory,
// Kafka's format) is text:
//
//	0                      format version
//	N                      number of entries
//	<topic> <partition> <hw>   N lines, topic names contain no spaces
//
// It is replaced atomically (segment.WriteCheckpoint) at most once a second
// while HWs move, when a partition stops and on Close. A lost or stale
// checkpoint only makes a new leader start from a lower HW (its HW catches
// up as followers fetch); it never exposes uncommitted records.
const checkpointVersion = 0

// checkpointInterval bounds how often a moving HW is written out.
const checkpointInterval = time.Second

func encodeCheckpoint(hws map[tp]int64) []byte {
	keys := make([]tp, 0, len(hws))
	for k := range hws {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].topic != keys[j].topic {
			return keys[i].topic < keys[j].topic
		}
		return keys[i].partition < keys[j].partition
	})
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n%d\n", checkpointVersion, len(keys))
	for _, k := range keys {
		fmt.Fprintf(&b, "%s %d %d\n", k.topic, k.partition, hws[k])
	}
	return b.Bytes()
}

// decodeCheckpoint parses a checkpoint; a malformed file is an error naming the line.
func decodeCheckpoint(data []byte) (map[tp]int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	line := 0
	next := func() (string, bool) {
		line++
		if !sc.Scan() {
			return "", false
		}
		return sc.Text(), true
	}
	bad := func(why string) error { return fmt.Errorf("broker: HW checkpoint line %d: %s", line, why) }
	v, ok := next()
	if !ok || strings.TrimSpace(v) != strconv.Itoa(checkpointVersion) {
		return nil, bad("unknown version")
	}
	v, ok = next()
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if !ok || err != nil || n < 0 {
		return nil, bad("bad entry count")
	}
	out := make(map[tp]int64, min(n, 1<<16))
	for range n {
		v, ok = next()
		f := strings.Fields(v)
		if !ok || len(f) != 3 {
			return nil, bad("want <topic> <partition> <hw>")
		}
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		hw, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || p < 0 || hw < 0 {
			return nil, bad("bad number")
		}
		out[tp{f[0], int32(p)}] = hw
	}
	return out, nil
}

func readCheckpoint(fs segment.FS, path string) (map[tp]int64, error) {
	data, err := segment.ReadCheckpoint(fs, path)
	if errors.Is(err, os.ErrNotExist) {
		return map[tp]int64{}, nil
	}
	if err != nil {
		return nil, err
	}
	return decodeCheckpoint(data)
}

// writeCheckpoint writes the HW of every open partition (and keeps entries
// read at start for partitions not opened yet).
func (b *Broker) writeCheckpoint() error {
	b.ckptMu.Lock()
	defer b.ckptMu.Unlock()
	b.ckptDirty.Store(false)
	b.mu.Lock()
	hws := make(map[tp]int64, len(b.mu.ckpt)+len(b.mu.parts))
	for k, hw := range b.mu.ckpt {
		if _, open := b.mu.parts[k]; !open {
			hws[k] = hw
		}
	}
	parts := make([]*partition, 0, len(b.mu.parts))
	for _, p := range b.mu.parts {
		parts = append(parts, p)
	}
	b.mu.Unlock()
	for _, p := range parts {
		p.mu.Lock()
		if !p.mu.stopped {
			hws[p.key] = p.mu.r.HW()
		}
		p.mu.Unlock()
	}
	if err := os.MkdirAll(b.cfg.DataDir, 0o755); err != nil {
		return err
	}
	return segment.WriteCheckpoint(b.cfg.Log.FS, filepath.Join(b.cfg.DataDir, CheckpointFile), encodeCheckpoint(hws))
}

func (b *Broker) checkpointLoop() {
	defer b.wg.Done()
	t := time.NewTicker(checkpointInterval)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-t.C:
			if b.ckptDirty.Load() {
				failing = b.checkpointOnce(failing)
			}
			for _, p := range b.partitions() {
				p.maybeSnapshot(uint64(b.cfg.ProducerSnapshotBatches), b.cfg.ProducerSnapshotBytes)
			}
		}
	}
}

// checkpointOnce writes the HW checkpoint for checkpointLoop and returns
// whether the write failed. A failed write (a full disk, an I/O error)
// leaves the checkpoint dirty, so the next tick tries again even if no HW
// moves meanwhile (on a full disk none does: produce is refused); it is
// logged once when the writes start failing and once when they succeed
// again, not at every tick. A stale checkpoint is safe (an HW read at
// start only ever lags), only slower to recover from.
func (b *Broker) checkpointOnce(failing bool) bool {
	err := b.writeCheckpoint()
	switch {
	case err != nil:
		b.ckptDirty.Store(true)
		if !failing {
			b.log.Error("writing HW checkpoint; retrying every tick (logged again once it succeeds)", "err", err)
		}
		return true
	case failing:
		b.log.Info("HW checkpoint written again")
	}
	return false
}
