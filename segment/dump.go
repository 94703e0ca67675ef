package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// Dumping files for people (Kafka's kafka-dump-log): DumpLog prints a
// segment's batches (and with records, every record), checking each one as
// recovery would, and says where and why the valid data ends; DumpIndex
// prints an .index or .timeindex. They read files that may be damaged:
// every length is checked against the bytes present before anything is
// allocated or read.

// DumpOptions tune DumpLog.
type DumpOptions struct {
	// Records prints every record (offset, timestamp, key, value, headers)
	// under its batch.
	Records bool
	// MaxValueBytes truncates printed keys, values and header values to
	// this many bytes (negative: no limit).
	MaxValueBytes int
	// Describe, when set, renders each record's key and value instead of
	// printing them as bytes (the metadata log's decoder: log dump
	// --metadata).
	Describe func(offset int64, key, value []byte) string
}

// DumpSummary is what DumpLog found.
type DumpSummary struct {
	Batches, Records int64
	ValidBytes       int64 // bytes of whole, valid batches from the start
	FileBytes        int64
	FirstOffset      int64 // -1 without batches
	LastOffset       int64 // -1 without batches
	// LastEpoch is the partition leader epoch of the batch holding
	// LastOffset (-1 without batches).
	LastEpoch int32
	// End says why the scan stopped before FileBytes ("" when the valid
	// batches fill the file): zeros never written (an active segment's
	// unused room), a torn tail, or a corrupt batch.
	End string
	// Corrupt is set when the valid data ends in something other than
	// zeros or a batch cut short at the end of the file.
	Corrupt bool
	// Gaps counts batches whose base offset does not follow the previous
	// batch's last offset.
	Gaps int
	// BadRecords counts whole, CRC-valid batches whose records do not
	// decode (with DumpOptions.Records only): a compressed section that
	// does not decompress, a codec this build does not read, malformed
	// records. Each prints an error line under its batch and the dump goes
	// on with the next batch: the CRC vouches for the batch's length.
	BadRecords int
}

// DumpLog prints the batches of the segment file r (size bytes) to w: one
// line per batch, its compression codec included, and with opts.Records
// its records, decompressed. A batch whose records do not decode prints an
// UNDECODABLE line after the records before the bad one, and the dump goes
// on (DumpSummary.BadRecords); a batch that fails its CRC ends it.
func DumpLog(w io.Writer, r io.ReaderAt, size int64, opts DumpOptions) (DumpSummary, error) {
	s := DumpSummary{FileBytes: size, FirstOffset: -1, LastOffset: -1, LastEpoch: -1}
	var prefix [HeaderSize]byte
	var buf []byte
	it := &Records{}
	pos := int64(0)
	for pos < size {
		n := min(int64(HeaderSize), size-pos)
		if _, err := r.ReadAt(prefix[:n], pos); err != nil && !errors.Is(err, io.EOF) {
			return s, fmt.Errorf("segment: read at byte %d: %w", pos, err)
		}
		if allZero(prefix[:n]) {
			if zeros, err := zerosTo(r, pos, size); err != nil {
				return s, err
			} else if zeros {
				s.End = fmt.Sprintf("zeros from byte %d to the end (room never written)", pos)
				break
			}
		}
		if n < lengthPrefix {
			s.End = fmt.Sprintf("torn tail: %d bytes at byte %d, too short for a batch", n, pos)
			break
		}
		length := int32(be.Uint32(prefix[offLength:]))
		if length < minLength || length > maxLength {
			s.End, s.Corrupt = fmt.Sprintf("corrupt: invalid batch length %d at byte %d", length, pos), true
			break
		}
		bsize := int64(lengthPrefix) + int64(length)
		if bsize > size-pos {
			s.End = fmt.Sprintf("torn tail: a batch of %d bytes at byte %d, but only %d remain", bsize, pos, size-pos)
			break
		}
		if cap(buf) < int(bsize) {
			buf = make([]byte, bsize)
		}
		b := Batch(buf[:bsize])
		if _, err := r.ReadAt(b, pos); err != nil && !errors.Is(err, io.EOF) {
			return s, fmt.Errorf("segment: read at byte %d: %w", pos, err)
		}
		if err := b.Validate(); err != nil {
			s.End, s.Corrupt = fmt.Sprintf("corrupt: batch at byte %d: %v", pos, err), true
			break
		}
		h, _ := ParseHeader(b) // Validate parsed it
		gap := ""
		if s.LastOffset >= 0 && h.BaseOffset != s.LastOffset+1 {
			gap = fmt.Sprintf(" OFFSET-GAP(expected %d)", s.LastOffset+1)
			s.Gaps++
		}
		flags := ""
		if h.Compacted() {
			flags = " compacted: true"
		}
		if h.LogAppendTime() {
			flags += " timestampType: LogAppendTime"
		}
		lastSeq := int32(-1)
		if h.BaseSequence >= 0 {
			lastSeq = h.BaseSequence + h.LastOffsetDelta
		}
		fmt.Fprintf(w, "baseOffset: %d lastOffset: %d count: %d position: %d size: %d leaderEpoch: %d "+
			"producerId: %d producerEpoch: %d baseSequence: %d lastSequence: %d firstTimestamp: %s maxTimestamp: %s compression: %s crc: %08x valid: true%s%s\n",
			h.BaseOffset, h.LastOffset(), h.RecordCount, pos, bsize, h.LeaderEpoch,
			h.ProducerID, h.ProducerEpoch, h.BaseSequence, lastSeq, fmtMillis(h.FirstTimestamp), fmtMillis(h.MaxTimestamp), h.Compression(), h.CRC, flags, gap)
		if s.FirstOffset < 0 {
			s.FirstOffset = h.BaseOffset
		}
		s.LastOffset = h.LastOffset()
		s.LastEpoch = h.LeaderEpoch
		s.Batches++
		s.Records += int64(h.RecordCount)
		if opts.Records {
			if err := dumpRecords(w, it, b, opts); err != nil {
				fmt.Fprintf(w, "| UNDECODABLE: records of the batch at byte %d (compression %s): %v\n", pos, h.Compression(), err)
				s.BadRecords++
			}
		}
		pos += bsize
		s.ValidBytes = pos
	}
	return s, nil
}

// dumpRecords prints the records of the valid batch b (decompressed, if it
// is compressed) with the iterator it, and returns the error that ended them
// early, if any: the records before it are printed.
func dumpRecords(w io.Writer, it *Records, b Batch, opts DumpOptions) error {
	limit := opts.MaxValueBytes
	it.Reset(b)
	for it.Next() {
		rec := it.Record()
		if opts.Describe != nil {
			fmt.Fprintf(w, "| offset: %d timestamp: %s %s\n", rec.Offset, fmtMillis(rec.Timestamp), opts.Describe(rec.Offset, rec.Key, rec.Value))
			continue
		}
		fmt.Fprintf(w, "| offset: %d timestamp: %s key: %s value: %s", rec.Offset, fmtMillis(rec.Timestamp),
			quoteBytes(rec.Key, limit), quoteBytes(rec.Value, limit))
		for _, hd := range rec.Headers {
			fmt.Fprintf(w, " header %s: %s", strconv.Quote(hd.Key), quoteBytes(hd.Value, limit))
		}
		fmt.Fprintln(w)
	}
	return it.Err()
}

// zerosTo reports whether r holds only zero bytes from pos to size.
func zerosTo(r io.ReaderAt, pos, size int64) (bool, error) {
	var chunk [64 << 10]byte
	for pos < size {
		n := min(int64(len(chunk)), size-pos)
		if _, err := r.ReadAt(chunk[:n], pos); err != nil && !errors.Is(err, io.EOF) {
			return false, fmt.Errorf("segment: read at byte %d: %w", pos, err)
		}
		if !allZero(chunk[:n]) {
			return false, nil
		}
		pos += n
	}
	return true, nil
}

// quoteBytes renders b as a Go string literal, cut after limit bytes
// (limit < 0: whole), or null for a nil key or value.
func quoteBytes(b []byte, limit int) string {
	if b == nil {
		return "null"
	}
	if limit >= 0 && len(b) > limit {
		return strconv.Quote(string(b[:limit])) + fmt.Sprintf("...(%d bytes)", len(b))
	}
	return strconv.Quote(string(b))
}

// fmtMillis renders unix milliseconds as UTC time with the raw value.
func fmtMillis(ms int64) string {
	return fmt.Sprintf("%d(%s)", ms, time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z"))
}

// IndexKind says which index file DumpIndex reads.
type IndexKind int

const (
	OffsetIndex IndexKind = iota // .index: relative offset uint32, position uint32
	TimeIndex                    // .timeindex: timestamp int64, relative offset uint32
)

// DumpIndex prints the entries of an index file of the segment with base
// offset base (the number in its name) and checks that offsets (and
// positions, or timestamps) never go backwards. It returns the entries
// read and how many broke that order. Zero entries after the first are the
// unused room of an active segment's index and end the dump.
func DumpIndex(w io.Writer, r io.Reader, kind IndexKind, base int64) (entries, disorder int, err error) {
	size := offsetEntrySize
	if kind == TimeIndex {
		size = timeEntrySize
	}
	buf := make([]byte, size)
	var prevRel uint32
	var prevPos int64
	for i := 0; ; i++ {
		if got, err := io.ReadFull(r, buf); err != nil {
			if errors.Is(err, io.EOF) {
				return entries, disorder, nil
			}
			if errors.Is(err, io.ErrUnexpectedEOF) {
				fmt.Fprintf(w, "torn entry: the file ends %d bytes into entry %d\n", got, i)
				return entries, disorder + 1, nil
			}
			return entries, disorder, err
		}
		if i > 0 && allZero(buf) {
			fmt.Fprintf(w, "zeros from entry %d on (room never written)\n", i)
			return entries, disorder, nil
		}
		var rel uint32
		var second int64 // position or timestamp
		if kind == OffsetIndex {
			rel, second = binary.BigEndian.Uint32(buf), int64(binary.BigEndian.Uint32(buf[4:]))
		} else {
			second, rel = int64(binary.BigEndian.Uint64(buf)), binary.BigEndian.Uint32(buf[8:])
		}
		bad := ""
		if i > 0 && (rel < prevRel || second < prevPos) {
			bad = " OUT-OF-ORDER"
			disorder++
		}
		if kind == OffsetIndex {
			fmt.Fprintf(w, "offset: %d position: %d%s\n", base+int64(rel), second, bad)
		} else {
			fmt.Fprintf(w, "timestamp: %s offset: %d%s\n", fmtMillis(second), base+int64(rel), bad)
		}
		prevRel, prevPos = rel, second
		entries++
	}
}
