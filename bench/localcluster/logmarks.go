package localcluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// LogMarks is where every node's log ended at one instant (bytes), so the
// lines written after it can be copied out later (CopyLogsSince): the
// evidence of one episode, such as a slow failover trial.
type LogMarks map[int32]int64

// LogMarks returns the current size of every node's log.
func (c *Cluster) LogMarks() LogMarks {
	m := LogMarks{}
	for _, n := range c.nodes {
		if fi, err := os.Stat(n.logPath); err == nil {
			m[n.id] = fi.Size()
		}
	}
	return m
}

// CopyLogsSince copies what every node wrote to its log after marks into
// dir/nodeN.log (dir is created). A node missing from marks is copied
// whole; a log shorter than its mark (replaced) too.
func (c *Cluster) CopyLogsSince(marks LogMarks, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("localcluster: %w", err)
	}
	var errs []error
	for _, n := range c.nodes {
		if err := copyFrom(n.logPath, marks[n.id], filepath.Join(dir, fmt.Sprintf("node%d.log", n.id))); err != nil {
			errs = append(errs, fmt.Errorf("localcluster: node %d: %w", n.id, err))
		}
	}
	return errors.Join(errs...)
}

// LogSince returns the whole lines node id wrote to its log after byte
// off (a line still being written is left for the next call), and the
// offset after them, to pass next time: a log followed as it grows, by
// every incarnation. A log shorter than off (replaced) is read from 0.
func (c *Cluster) LogSince(id int32, off int64) ([]byte, int64, error) {
	n, err := c.node(id)
	if err != nil {
		return nil, off, err
	}
	f, err := os.Open(n.logPath)
	if err != nil {
		return nil, off, fmt.Errorf("localcluster: node %d: %w", id, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, off, fmt.Errorf("localcluster: node %d: %w", id, err)
	}
	if fi.Size() < off {
		off = 0
	}
	b := make([]byte, fi.Size()-off)
	k, err := f.ReadAt(b, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, off, fmt.Errorf("localcluster: node %d: %w", id, err)
	}
	b = b[:bytes.LastIndexByte(b[:k], '\n')+1]
	return b, off + int64(len(b)), nil
}

// copyFrom copies src from byte off (from 0 when src is shorter) to dst.
func copyFrom(src string, off int64, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if fi, err := in.Stat(); err == nil && fi.Size() < off {
		off = 0
	}
	if _, err := in.Seek(off, io.SeekStart); err != nil {
		return err
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
