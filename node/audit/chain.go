package audit

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Lines written to a file are chained: each carries "prev", the SHA-256
// (hex) of the previous line's bytes (without its newline), so that editing,
// removing or inserting a line breaks the chain at the line after it
// (VerifyChain). A file's first line carries the hash of the line the node
// wrote before it, in an earlier file (after a rotation) or "" for the
// first line the node ever wrote there. Removing lines from the end is not
// detectable this way: ship the file off the node, or record the last hash
// elsewhere, to cover that.

// tailWindow is how much of an existing file Open reads to find its last
// line (far more than a line holds).
const tailWindow = 4 << 20

// lastLine returns f's last line without its newline (nil for an empty
// file), reading at most tailWindow bytes from its end. A last line without a
// newline (a write cut by a crash) is ended with one first, so the next
// line starts on its own; the cut line counts as a line of the chain.
func lastLine(f *os.File) ([]byte, error) {
	last, cut, err := tail(f)
	if err == nil && cut {
		_, err = f.Write([]byte{'\n'})
	}
	return last, err
}

// tail returns f's last line without its newline (nil for an empty file),
// reading at most tailWindow bytes from its end; cut says the file does not
// end with a newline (the line was cut by a crash).
func tail(f *os.File) (last []byte, cut bool, err error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	size := fi.Size()
	if size == 0 {
		return nil, false, nil
	}
	n := min(size, tailWindow)
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, size-n); err != nil && !errors.Is(err, io.EOF) {
		return nil, false, err
	}
	if buf[len(buf)-1] != '\n' {
		cut = true
	} else {
		buf = buf[:len(buf)-1]
	}
	i := bytes.LastIndexByte(buf, '\n')
	if i < 0 && n < size {
		return nil, false, fmt.Errorf("its last line is longer than %d bytes", tailWindow)
	}
	return buf[i+1:], cut, nil
}

// lineHash is a line's hash as "prev" carries it.
func lineHash(line []byte) string {
	h := sha256.Sum256(line)
	return hex.EncodeToString(h[:])
}

// ChainReport is what VerifyChain found.
type ChainReport struct {
	Lines int // lines read
	// Anchor is the first line's "prev": the hash of a line before this
	// file ("" when the file starts the chain).
	Anchor string
	// Last is the hash of the last line (what the next line's prev will be).
	Last string
}

// VerifyChain reads audit lines and checks that each one's "prev" is the
// hash of the line before it. It returns the first break as an error naming
// the line: edited, removed or inserted lines, or a line that is not JSON.
func VerifyChain(r io.Reader) (ChainReport, error) {
	var rep ChainReport
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, tailWindow)
	prev := ""
	for sc.Scan() {
		rep.Lines++
		line := sc.Bytes()
		var l struct {
			Prev *string `json:"prev"`
		}
		if err := json.Unmarshal(line, &l); err != nil {
			return rep, fmt.Errorf("line %d is not an audit line (a write cut by a crash, or edited): %v", rep.Lines, err)
		}
		got := ""
		if l.Prev != nil {
			got = *l.Prev
		}
		switch {
		case rep.Lines == 1:
			rep.Anchor = got
		case got != prev:
			return rep, fmt.Errorf("line %d does not follow line %d: its prev is %.16s…, line %d hashes to %.16s… (a line edited, removed or inserted there)",
				rep.Lines, rep.Lines-1, got, rep.Lines-1, prev)
		}
		prev = lineHash(line)
	}
	if err := sc.Err(); err != nil {
		return rep, err
	}
	rep.Last = prev
	return rep, nil
}
