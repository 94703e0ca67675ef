package chaos

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"paymentlog/segment"
)

// TornResult says what a torn tail did.
type TornResult struct {
	Mode      TornMode // the mode applied (after any fallback)
	Partition int      // the partition damaged (MetadataLog for the metadata log)
	File      string
	Action    string // "truncate", "zero", "garbage", "overwrite", "rot", "wipe"
	Pos       int64  // first damaged byte
	// Len is the damaged bytes (for truncate: bytes cut off, up to the old
	// data end; for rot: from the first flipped byte to the last, the
	// bytes between them unchanged).
	Len int64
	// FirstOffset is the first offset whose batch was damaged (-1 when only
	// bytes after the data were touched).
	FirstOffset int64
	// Changed counts the bytes of [Pos, Pos+Len) whose content differs
	// afterwards (a byte cut off, or past the end of the file, reads as 0):
	// a cut at the data's end, an overwrite of 0 bytes or garbage of zeros
	// over zeros changes nothing.
	Changed int64
}

// Applied reports whether the torn tail damaged anything. One that did not
// must not count as an applied torn tail.
func (r TornResult) Applied() bool { return r.Changed > 0 }

func (r TornResult) String() string {
	s := fmt.Sprintf("%s: %s %d bytes at %d of %s (first damaged offset %d, %d bytes changed)", r.Mode, r.Action, r.Len, r.Pos, shortPath(r.File), r.FirstOffset, r.Changed)
	if !r.Applied() {
		s += ", NOT APPLIED: no byte changed"
	}
	return s
}

// ApplyTorn damages the last segment of a stopped node's partition (or
// metadata) directory as t says (TornRot: a sealed segment, or with none
// holding records the last one as TornOverwrite; TornWipe: the directory). unackedFrom is the first offset of the
// partition that no acknowledged record may occupy: TornCutUnacked cuts only
// inside batches at or after it (and falls back to TornGarbage without
// such batches). The caller has checked the precondition of the acked modes.
func ApplyTorn(dir string, t Torn, unackedFrom int64) (TornResult, error) {
	if t.Mode == TornWipe {
		return wipe(dir)
	}
	s, err := ScanPartition(dir, false)
	if err != nil {
		return TornResult{}, err
	}
	if len(s.Files) == 0 {
		return TornResult{}, fmt.Errorf("chaos: torn tail: no segment in %s", dir)
	}
	rng := rand.New(rand.NewPCG(t.Seed, 0x746f726e))
	if t.Mode == TornRot {
		if sf, res, do := rot(s, rng); do != nil {
			err := damage(sf, &res, do)
			return res, err
		}
		t.Mode = TornOverwrite // no sealed segment holds a record
	}
	sf := &s.Files[len(s.Files)-1]
	mode := t.Mode
	if len(sf.Batches) == 0 {
		mode = TornGarbage // an empty (just rolled) last segment: nothing to cut
	}
	res := TornResult{Mode: mode, File: sf.Path, FirstOffset: -1}
	// Each case plans its change into res (Pos, Len, ...) and returns it;
	// damage applies it and counts what it changed.
	var do func() error
	switch mode {
	case TornCutUnacked:
		first := -1
		for i, base := range sf.Firsts {
			if base >= unackedFrom {
				first = i
				break
			}
		}
		if first < 0 {
			res.Mode = TornGarbage
			do = garbage(sf, t, rng, &res)
			break
		}
		lo := sf.Batches[first]
		pos := lo + int64(t.Frac*float64(sf.End-lo))
		do = cut(sf, pos, rng, &res)
	case TornCutAcked:
		pos := int64(t.Frac * float64(sf.End))
		do = cut(sf, pos, rng, &res)
	case TornOverwrite:
		n := min(max(int64(t.Len), 0), sf.End)
		res.Action, res.Pos, res.Len = "overwrite", sf.End-n, n
		res.FirstOffset = offsetAt(sf, res.Pos)
		b := randomBytes(rng, int(n), true)
		do = func() error { return writeAt(sf.Path, res.Pos, b) }
	default:
		res.Mode = TornGarbage
		do = garbage(sf, t, rng, &res)
	}
	err = damage(sf, &res, do)
	return res, err
}

// rotMaxBytes bounds how many bytes a TornRot flips (at least one).
const rotMaxBytes = 8

// rot plans a TornRot: 1–rotMaxBytes bytes at distinct positions inside
// the records (after the header) of a random batch of a random sealed
// segment of s, each XORed with a nonzero byte. It returns the segment,
// the plan and its change, for damage; do is nil when no sealed segment
// holds a batch with records.
func rot(s *PartitionScan, rng *rand.Rand) (*SegmentFile, TornResult, func() error) {
	var files []int
	for i := range len(s.Files) - 1 {
		if len(recordSpans(&s.Files[i])) > 0 {
			files = append(files, i)
		}
	}
	if len(files) == 0 {
		return nil, TornResult{}, nil
	}
	sf := &s.Files[files[rng.IntN(len(files))]]
	spans := recordSpans(sf)
	j := spans[rng.IntN(len(spans))]
	size := sf.batchEnd(j) - sf.Batches[j] - segment.HeaderSize
	n := min(1+rng.IntN(rotMaxBytes), int(size))
	at := map[int64]byte{} // position -> the XOR mask
	for len(at) < n {
		at[sf.Batches[j]+segment.HeaderSize+rng.Int64N(size)] = byte(1 + rng.IntN(255))
	}
	pos := slices.Sorted(maps.Keys(at))
	res := TornResult{Mode: TornRot, File: sf.Path, Action: "rot", Pos: pos[0], Len: pos[len(pos)-1] - pos[0] + 1, FirstOffset: sf.Firsts[j]}
	do := func() error {
		b, err := readRegion(sf.Path, res.Pos, res.Len)
		if err != nil {
			return err
		}
		for p, mask := range at {
			b[p-res.Pos] ^= mask
		}
		return writeAt(sf.Path, res.Pos, b)
	}
	return sf, res, do
}

// recordSpans lists the batches of sf (indexes into Batches) that hold
// bytes after their header.
func recordSpans(sf *SegmentFile) []int {
	var out []int
	for j := range sf.Batches {
		if sf.batchEnd(j)-sf.Batches[j] > segment.HeaderSize {
			out = append(out, j)
		}
	}
	return out
}

// batchEnd is the byte position after batch j of sf.
func (sf *SegmentFile) batchEnd(j int) int64 {
	if j+1 < len(sf.Batches) {
		return sf.Batches[j+1]
	}
	return sf.End
}

// damage applies do, which changes [res.Pos, res.Pos+res.Len) of the
// segment file, and counts the bytes it changed into res.Changed.
func damage(sf *SegmentFile, res *TornResult, do func() error) error {
	before, err := readRegion(sf.Path, res.Pos, res.Len)
	if err != nil {
		return err
	}
	if err := do(); err != nil {
		return err
	}
	after, err := readRegion(sf.Path, res.Pos, res.Len)
	if err != nil {
		return err
	}
	for i := range before {
		if before[i] != after[i] {
			res.Changed++
		}
	}
	return nil
}

// lastNonZero is the position of the last nonzero byte among the 4 KiB
// before end, or -1 when they are all zeros.
func lastNonZero(path string, end int64) (int64, error) {
	from := max(end-4096, 0)
	b, err := readRegion(path, from, end-from)
	if err != nil {
		return -1, err
	}
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] != 0 {
			return from + int64(i), nil
		}
	}
	return -1, nil
}

// readRegion reads n bytes at pos; bytes past the end of the file read as 0.
func readRegion(path string, pos, n int64) ([]byte, error) {
	b := make([]byte, n)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("chaos: torn tail: %w", err)
	}
	defer f.Close()
	if _, err := f.ReadAt(b, pos); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("chaos: torn tail: %w", err)
	}
	return b, nil
}

// cut plans the loss of every byte from pos on: the file is truncated
// there, or (as after a power loss on a preallocated file) those bytes are
// zeroed. It returns the change, for damage.
func cut(sf *SegmentFile, pos int64, rng *rand.Rand, res *TornResult) func() error {
	pos = min(max(pos, 0), sf.End)
	// A cut that drops only zeros damages nothing: they read back as zeros
	// (a truncated active segment is extended again on open), and a batch
	// often ends in one (a record's header count). Such a cut starts at the
	// last nonzero byte instead, still inside the last batch.
	if pos < sf.End {
		if nz, err := lastNonZero(sf.Path, sf.End); err == nil && nz >= 0 && nz < pos {
			pos = nz
		}
	}
	res.Pos, res.Len = pos, sf.End-pos
	res.FirstOffset = offsetAt(sf, pos)
	if rng.IntN(2) == 0 {
		res.Action = "truncate"
		return func() error { return os.Truncate(sf.Path, pos) }
	}
	res.Action = "zero"
	return func() error {
		if sf.End == pos {
			return nil
		}
		return writeAt(sf.Path, pos, make([]byte, sf.End-pos))
	}
}

// garbage plans a partial batch after the data: a plausible header prefix
// (the next base offset, a length longer than what follows) and random
// bytes. It returns the change, for damage.
func garbage(sf *SegmentFile, t Torn, rng *rand.Rand, res *TornResult) func() error {
	n := max(t.Len, 1)
	b := randomBytes(rng, n, false)
	if n >= batchPrefix {
		next := int64(0)
		if k := len(sf.Lasts); k > 0 {
			next = sf.Lasts[k-1] + 1
		}
		binary.BigEndian.PutUint64(b, uint64(next))
		binary.BigEndian.PutUint32(b[8:], uint32(n+100+rng.IntN(1000)))
	}
	res.Action, res.Pos, res.Len = "garbage", sf.End, int64(n)
	return func() error { return writeAt(sf.Path, sf.End, b) }
}

// offsetAt is the base offset of the batch holding byte pos (-1 past the data).
func offsetAt(sf *SegmentFile, pos int64) int64 {
	off := int64(-1)
	for i, p := range sf.Batches {
		if p > pos {
			break
		}
		if pos < sf.End {
			off = sf.Firsts[i]
		}
	}
	return off
}

func randomBytes(rng *rand.Rand, n int, nonZero bool) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.IntN(256))
		if nonZero && b[i] == 0 {
			b[i] = 0xa5
		}
	}
	return b
}

func writeAt(path string, pos int64, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("chaos: torn tail: %w", err)
	}
	if _, err := f.WriteAt(b, pos); err != nil {
		f.Close()
		return fmt.Errorf("chaos: torn tail: %w", err)
	}
	return f.Close()
}

// shortPath keeps the last three elements of a path (nodeN/data/dir/file).
func shortPath(p string) string {
	parts := strings.Split(p, string(os.PathSeparator))
	if len(parts) > 4 {
		parts = parts[len(parts)-4:]
	}
	return strings.Join(parts, string(os.PathSeparator))
}

// wipe removes dir whole (TornWipe); Changed counts the bytes its files held.
func wipe(dir string) (TornResult, error) {
	res := TornResult{Mode: TornWipe, File: dir, Action: "wipe", FirstOffset: 0}
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if info, ierr := d.Info(); ierr == nil && !d.IsDir() {
			res.Len += info.Size()
		}
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("chaos: wipe: %w", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return res, fmt.Errorf("chaos: wipe: %w", err)
	}
	res.Changed = res.Len
	return res, nil
}
