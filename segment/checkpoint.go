package segment

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// WriteCheckpoint atomically replaces path with data (write tmp, fsync, rename, fsync dir).
func WriteCheckpoint(fs FS, path string, data []byte) error {
	fs = fsOrDefault(fs)
	tmp := path + ".tmp"
	f, err := fs.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("segment: write checkpoint %s: %w", path, err)
	}
	_, err = f.WriteAt(data, 0)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fs.Rename(tmp, path)
	}
	if err != nil {
		_ = fs.Remove(tmp)
		return fmt.Errorf("segment: write checkpoint %s: %w", path, err)
	}
	if err := fs.SyncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("segment: write checkpoint %s: %w", path, err)
	}
	return nil
}

// ReadCheckpoint reads a checkpoint written by WriteCheckpoint (os.ErrNotExist if absent).
func ReadCheckpoint(fs FS, path string) ([]byte, error) {
	fs = fsOrDefault(fs)
	f, err := fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, size)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !(err == io.EOF && int64(n) == size) {
		return nil, err
	}
	return buf, nil
}

const checkpointVersion = 0

// writeOffsetCheckpoint stores one offset (format: "0\n<offset>\n").
func writeOffsetCheckpoint(fs FS, path string, off int64) error {
	return WriteCheckpoint(fs, path, []byte(fmt.Sprintf("%d\n%d\n", checkpointVersion, off)))
}

// readOffsetCheckpoint returns the stored offset, or ok=false if the file is absent.
func readOffsetCheckpoint(fs FS, path string) (off int64, ok bool, err error) {
	data, err := ReadCheckpoint(fs, path)
	if os.IsNotExist(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	lines, err := checkpointLines(path, data)
	if err != nil {
		return 0, false, err
	}
	if len(lines) != 1 {
		return 0, false, corruptf("checkpoint %s: want 1 value, have %d lines", path, len(lines))
	}
	off, err = strconv.ParseInt(string(lines[0]), 10, 64)
	if err != nil || off < 0 {
		return 0, false, corruptf("checkpoint %s: bad offset %q", path, lines[0])
	}
	return off, true, nil
}

// checkpointLines checks the version line and returns the remaining lines.
func checkpointLines(path string, data []byte) ([][]byte, error) {
	var lines [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		lines = append(lines, append([]byte(nil), sc.Bytes()...))
	}
	if len(data) == 0 || data[len(data)-1] != '\n' || len(lines) == 0 {
		return nil, corruptf("checkpoint %s: truncated", path)
	}
	if string(lines[0]) != strconv.Itoa(checkpointVersion) {
		return nil, corruptf("checkpoint %s: unknown version %q", path, lines[0])
	}
	return lines[1:], nil
}
