package segment

import (
	"encoding/binary"
)

// RecordHeader is a record header (key/value pair).
type RecordHeader struct {
	Key   string
	Value []byte
}

// Record is one record read by an iterator; its byte slices alias the batch.
type Record struct {
	Offset    int64
	Timestamp int64 // unix milliseconds
	Key       []byte
	Value     []byte
	Headers   []RecordHeader
}

// Records iterates the records of a batch without allocating per record. The
// Record returned by Record, including its Headers slice, is valid until the
// next call to Next. Header keys are strings; a key equal to the key at the
// same position in the previous record reuses that string, so iterating
// records with the same header keys does not allocate either.
type Records struct {
	b       []byte
	pos     int
	end     int
	i, n    int
	base    int64
	firstTs int64
	// logAppendTime: every record's timestamp is appendTs, the batch's
	// MaxTimestamp (AttrLogAppendTime).
	logAppendTime bool
	appendTs      int64
	// compacted: offset deltas increase with gaps, up to lastDelta
	// (AttrCompacted); otherwise each record's delta is its index.
	compacted bool
	lastDelta int64
	prevDelta int64
	// rawStart..rawEnd are the current record's bytes, length varint included.
	rawStart, rawEnd int
	rec              Record
	hdrs             []RecordHeader
	keys             []string
	err              error
}

// Iter returns an iterator over the batch's records. The batch should have
// been validated (Validate); malformed records end the iteration with Err set,
// as does a compressed batch that does not decompress (or whose codec this
// build does not read: ErrUnsupportedCodec).
func (b Batch) Iter() *Records {
	it := &Records{}
	it.Reset(b)
	return it
}

// Reset points the iterator at another batch, reusing its buffers.
func (it *Records) Reset(b Batch) {
	*it = Records{hdrs: it.hdrs[:0], keys: it.keys}
	h, err := ParseHeader(b)
	if err != nil {
		it.err = err
		return
	}
	size := lengthPrefix + int(h.Length)
	if size > len(b) {
		it.err = corruptf("batch of %d bytes truncated to %d", size, len(b))
		return
	}
	it.b, it.pos, it.end = b, HeaderSize, size
	it.n, it.base, it.firstTs = int(h.RecordCount), h.BaseOffset, h.FirstTimestamp
	if h.LogAppendTime() {
		it.appendTs, it.logAppendTime = h.MaxTimestamp, true
	}
	it.compacted, it.lastDelta, it.prevDelta = h.Compacted(), int64(h.LastOffsetDelta), -1
	if c := h.Compression(); c != CodecNone {
		// A new buffer per batch: records handed out alias it, as they
		// alias an uncompressed batch.
		out, err := decompressRecords(c, b[HeaderSize:size])
		if err != nil {
			it.b, it.err = nil, err
			return
		}
		it.b, it.pos, it.end = out, 0, len(out)
	}
}

// ValidateRecords checks that every record of the batch decodes (after
// decompression): the count the header claims, offset deltas in order, no
// bytes left over. A leader checks each batch a producer sends, so that no
// record that no consumer could read is ever acknowledged.
//
// The iterator stops after the header's RecordCount records and reports
// bytes left over, so a batch that ends without error holds exactly that
// many.
func (b Batch) ValidateRecords() error {
	var it Records
	it.Reset(b)
	for it.Next() {
	}
	return it.Err()
}

// Next advances to the next record and reports whether there is one.
func (it *Records) Next() bool {
	if it.err != nil {
		return false
	}
	if it.i >= it.n {
		if it.b != nil && it.pos != it.end {
			it.err = corruptf("%d trailing bytes after %d records", it.end-it.pos, it.n)
		}
		return false
	}
	if err := it.decode(); err != nil {
		it.err = err
		return false
	}
	it.i++
	return true
}

func (it *Records) varint() (int64, bool) {
	v, n := binary.Varint(it.b[it.pos:it.end])
	if n <= 0 {
		return 0, false
	}
	it.pos += n
	return v, true
}

// bytes reads a length-prefixed byte string; -1 is null.
func (it *Records) bytes() ([]byte, bool) {
	l, ok := it.varint()
	if !ok || l < -1 || l > int64(it.end-it.pos) {
		return nil, false
	}
	if l == -1 {
		return nil, true
	}
	p := it.b[it.pos : it.pos+int(l) : it.pos+int(l)]
	it.pos += int(l)
	return p, true
}

func (it *Records) decode() error {
	it.rawStart = it.pos
	length, ok := it.varint()
	if !ok || length < 1 || length > int64(it.end-it.pos) {
		return corruptf("record %d: invalid length", it.i)
	}
	recEnd := it.pos + int(length)
	saveEnd := it.end
	it.end = recEnd
	defer func() { it.end = saveEnd }()
	it.pos++ // attributes
	tsDelta, ok1 := it.varint()
	offDelta, ok2 := it.varint()
	if !ok1 || !ok2 {
		return corruptf("record %d: bad varint", it.i)
	}
	switch {
	case it.compacted && (offDelta <= it.prevDelta || offDelta > it.lastDelta):
		return corruptf("record %d: offset delta %d after %d in a compacted batch of last delta %d", it.i, offDelta, it.prevDelta, it.lastDelta)
	case !it.compacted && offDelta != int64(it.i):
		return corruptf("record %d: offset delta %d", it.i, offDelta)
	}
	it.prevDelta = offDelta
	key, ok1 := it.bytes()
	val, ok2 := it.bytes()
	if !ok1 || !ok2 {
		return corruptf("record %d: bad key or value length", it.i)
	}
	nh, ok := it.varint()
	if !ok || nh < 0 || nh > int64(it.end-it.pos)/2 {
		return corruptf("record %d: bad header count", it.i)
	}
	it.hdrs = it.hdrs[:0]
	for j := 0; j < int(nh); j++ {
		hk, ok1 := it.bytes()
		hv, ok2 := it.bytes()
		if !ok1 || !ok2 || hk == nil {
			return corruptf("record %d: bad header %d", it.i, j)
		}
		if j >= len(it.keys) {
			it.keys = append(it.keys, string(hk))
		} else if it.keys[j] != string(hk) {
			it.keys[j] = string(hk)
		}
		it.hdrs = append(it.hdrs, RecordHeader{Key: it.keys[j], Value: hv})
	}
	if it.pos != recEnd {
		return corruptf("record %d: %d bytes left over", it.i, recEnd-it.pos)
	}
	it.rawEnd = recEnd
	it.rec = Record{Offset: it.base + offDelta, Timestamp: it.firstTs + tsDelta, Key: key, Value: val}
	if it.logAppendTime {
		it.rec.Timestamp = it.appendTs
	}
	if nh > 0 {
		it.rec.Headers = it.hdrs
	}
	return nil
}

// Record returns the current record.
func (it *Records) Record() Record { return it.rec }

// raw returns the current record's encoded bytes (its length varint
// included), as stored in the (decompressed) records section.
func (it *Records) raw() []byte { return it.b[it.rawStart:it.rawEnd] }

// Err returns the error that ended the iteration, wrapping ErrCorrupt, or nil.
func (it *Records) Err() error { return it.err }
