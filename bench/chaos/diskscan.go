package chaos

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"paymentlog/segment"
)

// batchPrefix is the bytes of a batch header up to and including Length
// (segment's format: BaseOffset int64, Length int32).
const batchPrefix = 12

// maxScanBatch bounds a batch length the scanner trusts.
const maxScanBatch = 64 << 20

// SegmentFile is one .log file of a partition directory, as scanned.
type SegmentFile struct {
	Path    string
	Base    int64
	Size    int64   // file size (the active segment is preallocated: mostly zeros)
	End     int64   // byte position after the last whole, valid batch
	Batches []int64 // byte position of each valid batch
	Firsts  []int64 // base offset of each valid batch
	Lasts   []int64 // last offset of each valid batch
	Stop    string  // why the scan stopped before Size ("" at EOF)
}

// PartitionScan is a partition directory read raw, file by file, without
// opening it as a segment.Log: nothing is recovered, truncated or written.
type PartitionScan struct {
	Dir     string
	Files   []SegmentFile
	Batches []BatchInfo
	Records []LogRecord
	// Err: a gap between batches, or a bad batch in a segment other than the
	// last one that is not just zero padding (corruption the node should
	// have refused to start with).
	Err error
}

// LEO is the offset after the last valid batch (0 for an empty log).
func (s *PartitionScan) LEO() int64 {
	if n := len(s.Batches); n > 0 {
		return s.Batches[n-1].Last + 1
	}
	return 0
}

// Last is the last non-empty segment file (nil if none).
func (s *PartitionScan) Last() *SegmentFile {
	for i := len(s.Files) - 1; i >= 0; i-- {
		if len(s.Files[i].Batches) > 0 {
			return &s.Files[i]
		}
	}
	return nil
}

// segmentLogs lists dir's .log files in base-offset order.
func segmentLogs(dir string) ([]string, []int64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	type f struct {
		path string
		base int64
	}
	var fs []f
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".log") || len(name) != 24 {
			continue
		}
		base, err := strconv.ParseInt(strings.TrimSuffix(name, ".log"), 10, 64)
		if err != nil {
			continue
		}
		fs = append(fs, f{filepath.Join(dir, name), base})
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i].base < fs[j].base })
	paths, bases := make([]string, len(fs)), make([]int64, len(fs))
	for i, x := range fs {
		paths[i], bases[i] = x.path, x.base
	}
	return paths, bases, nil
}

// ScanPartition reads every batch of a partition directory. withRecords
// also decodes the records (values as strings).
func ScanPartition(dir string, withRecords bool) (*PartitionScan, error) {
	paths, bases, err := segmentLogs(dir)
	if err != nil {
		return nil, fmt.Errorf("chaos: scan %s: %w", dir, err)
	}
	s := &PartitionScan{Dir: dir}
	next := int64(-1)
	for i, path := range paths {
		sf, batches, err := scanFile(path, bases[i])
		if err != nil {
			return nil, err
		}
		s.Files = append(s.Files, sf)
		last := i == len(paths)-1
		if sf.Stop != "" && !last && !sf.zeroTail() {
			s.Err = errors.Join(s.Err, fmt.Errorf("%s: bad batch at byte %d in a sealed segment: %s", path, sf.End, sf.Stop))
		}
		for _, b := range batches {
			h, _ := segment.ParseHeader(b)
			if next >= 0 && h.BaseOffset != next {
				s.Err = errors.Join(s.Err, fmt.Errorf("%s: batch at offset %d follows offset %d", path, h.BaseOffset, next-1))
			}
			next = h.LastOffset() + 1
			s.Batches = append(s.Batches, BatchInfo{Base: h.BaseOffset, Last: h.LastOffset(), Epoch: h.LeaderEpoch, CRC: h.CRC, Size: len(b),
				Compacted: h.Compacted()})
			if !withRecords {
				continue
			}
			// Offsets come from the records' deltas: a batch the cleaner
			// rewrote (AttrCompacted) holds fewer records than its offsets
			// span, with gaps, down to none.
			it := b.Iter()
			for it.Next() {
				r := it.Record()
				k, v, tomb := storedValue(r.Key, r.Value, r.Headers)
				s.Records = append(s.Records, LogRecord{Offset: r.Offset, Value: v, Epoch: h.LeaderEpoch, Key: k, Tombstone: tomb})
			}
			if err := it.Err(); err != nil {
				s.Err = errors.Join(s.Err, fmt.Errorf("%s: records of batch %d: %w", path, h.BaseOffset, err))
			}
		}
	}
	return s, nil
}

// zeroTail reports whether the scan stopped at zero padding.
func (sf *SegmentFile) zeroTail() bool { return strings.HasPrefix(sf.Stop, "zeros") }

// scanFile reads one .log file batch by batch until EOF or the first batch
// that is not whole and valid.
func scanFile(path string, base int64) (SegmentFile, []segment.Batch, error) {
	sf := SegmentFile{Path: path, Base: base}
	f, err := os.Open(path)
	if err != nil {
		return sf, nil, fmt.Errorf("chaos: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return sf, nil, fmt.Errorf("chaos: %w", err)
	}
	sf.Size = st.Size()
	var out []segment.Batch
	pos := int64(0)
	var pre [batchPrefix]byte
	for pos < sf.Size {
		if _, err := f.ReadAt(pre[:], pos); err != nil {
			if errors.Is(err, io.EOF) {
				sf.Stop = fmt.Sprintf("%d trailing bytes", sf.Size-pos)
				break
			}
			return sf, nil, fmt.Errorf("chaos: %w", err)
		}
		length := int64(int32(binary.BigEndian.Uint32(pre[8:])))
		if pre == [batchPrefix]byte{} {
			sf.Stop = "zeros"
			break
		}
		if length < segment.HeaderSize-batchPrefix || length > maxScanBatch {
			sf.Stop = fmt.Sprintf("invalid batch length %d", length)
			break
		}
		size := batchPrefix + length
		if pos+size > sf.Size {
			sf.Stop = fmt.Sprintf("batch of %d bytes cut by the end of the file", size)
			break
		}
		buf := make([]byte, size)
		if _, err := f.ReadAt(buf, pos); err != nil {
			return sf, nil, fmt.Errorf("chaos: %w", err)
		}
		b := segment.Batch(buf)
		if err := b.Validate(); err != nil {
			sf.Stop = err.Error()
			break
		}
		sf.Batches = append(sf.Batches, pos)
		sf.Firsts = append(sf.Firsts, b.BaseOffset())
		sf.Lasts = append(sf.Lasts, b.LastOffset())
		out = append(out, b)
		pos += size
	}
	sf.End = pos
	return sf, out, nil
}
