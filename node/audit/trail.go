package audit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// FileReport is what VerifyTrail found in one file.
type FileReport struct {
	Path string
	ChainReport
}

// VerifyTrail verifies the trail a node writes to path: its rotated files
// (RotatedFiles), oldest first, then path itself (missing after a crash
// mid-rotation: then the rotated files alone), each with VerifyChain, and
// that each file's first line continues the last line of the file before
// (a file removed from the middle, or one edited at its end, breaks it
// there). An empty file continues nothing and breaks nothing. The oldest
// file's Anchor is the hash of a file removed before it ("" if the trail
// starts there). It returns the reports of the files read until the first
// break, and the break.
func VerifyTrail(path string) ([]FileReport, error) {
	files, err := RotatedFiles(path)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); err == nil || !errors.Is(err, fs.ErrNotExist) || len(files) == 0 {
		files = append(files, path)
	}
	var reps []FileReport
	last, lastFile := "", ""
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return reps, err
		}
		rep, err := VerifyChain(f)
		f.Close()
		reps = append(reps, FileReport{Path: name, ChainReport: rep})
		if err != nil {
			return reps, fmt.Errorf("%s: %w", name, err)
		}
		if rep.Lines == 0 {
			continue
		}
		if lastFile != "" && rep.Anchor != last {
			return reps, fmt.Errorf("%s does not continue %s: its first line's prev is %.16s…, the last line of %s hashes to %.16s… (a file between them removed, or lines cut from the end of %s)",
				name, lastFile, rep.Anchor, lastFile, last, lastFile)
		}
		last, lastFile = rep.Last, name
	}
	return reps, nil
}
