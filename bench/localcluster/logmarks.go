package localcluster

import (
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
