package audit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Rotation (PCI DSS 10.5.1, 10.7: the trail is kept, a year of it at
// least): when a line would take the file past MaxBytes, the file is
// renamed FILE.<time> (the time of the rotation, UTC, rotatedTimeFormat:
// names sort in the order the files were written, and a rotated file's name
// never changes again, so it can be copied off as it is) and a new FILE is
// started. Its first line's prev is the hash of the last line of the file
// before, so the chain runs across the files (VerifyTrail). Rotated files
// beyond MaxFiles are deleted, oldest first; MaxFiles 0 (the default)
// deletes none: how long the trail is kept is the operator's choice.
//
// The order of a rotation, each line already fsynced: rename FILE to
// FILE.<time>, create FILE, fsync the directory, write the line to the new
// FILE, delete the rotated files beyond MaxFiles. A crash after the rename
// leaves FILE missing (or empty): Open then continues the chain, and reads
// how the run ended, from the newest rotated file. A create that fails, or
// a directory fsync that fails after it (the new FILE is removed), puts
// FILE back; if that fails too, lines go on to the renamed file, which the
// chain holds as well, and the next rotation starts a new FILE without
// renaming again. Either way the line goes to the file open, the failure is
// logged and counted (paymentlog_audit_rotation_errors_total), and the
// next line tries again. No line is lost or written twice.

// DefaultMaxBytes is the size past which the file is rotated.
const DefaultMaxBytes = 100 << 20

// rotatedTimeFormat is the suffix of a rotated file's name: fixed width,
// so that names sort by time.
const rotatedTimeFormat = "20060102T150405.000000000Z"

// SetRotation makes the file rotate before a line would take it past
// maxBytes (0: never), keeping maxFiles rotated files (0: all).
func (l *Log) SetRotation(maxBytes int64, maxFiles int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.maxBytes, l.maxFiles = max(maxBytes, 0), max(maxFiles, 0)
}

// RotatedFiles returns path's rotated files (path.<time>), oldest first.
func RotatedFiles(path string) ([]string, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if suffix, ok := strings.CutPrefix(e.Name(), base+"."); ok && e.Type().IsRegular() && isRotatedSuffix(suffix) {
			out = append(out, filepath.Join(filepath.Dir(path), e.Name()))
		}
	}
	slices.Sort(out)
	return out, nil
}

func isRotatedSuffix(s string) bool {
	t, err := time.Parse(rotatedTimeFormat, s)
	return err == nil && t.Format(rotatedTimeFormat) == s
}

// rotatedName is the name path is rotated to at now: later than newest
// (the newest rotated file, "" if none) even if the clock went back.
func rotatedName(path string, now time.Time, newest string) string {
	now = now.UTC()
	if newest != "" {
		if t, err := time.Parse(rotatedTimeFormat, strings.TrimPrefix(newest, path+".")); err == nil && !now.After(t) {
			now = t.Add(time.Nanosecond)
		}
	}
	return path + "." + now.Format(rotatedTimeFormat)
}

// rotateFS is the file system calls a rotation makes: a seam for tests to
// make them fail (osRotateFS otherwise).
type rotateFS struct {
	rename  func(oldpath, newpath string) error
	create  func(path string) (*os.File, error) // the new FILE, appended to, 0600
	syncDir func(dir string) error
}

var osRotateFS = rotateFS{rename: os.Rename, create: createFile, syncDir: syncDir}

func createFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
}

// rotateLocked starts a new file (see the order above); l.mu is held and
// l.file is open. On an error the line goes to whichever file is open.
func (l *Log) rotateLocked() error {
	if err := l.file.Sync(); err != nil {
		return err
	}
	rotated, err := RotatedFiles(l.path)
	if err != nil {
		return err
	}
	name := l.renamedOpen // a rotation before renamed it and could not put it back
	if name == "" {
		newest := ""
		if len(rotated) > 0 {
			newest = rotated[len(rotated)-1]
		}
		name = rotatedName(l.path, l.now(), newest)
		if err := l.fs.rename(l.path, name); err != nil {
			return err
		}
		rotated = append(rotated, name)
	}
	// The open file is name now.
	f, err := l.fs.create(l.path)
	if err != nil {
		return l.putBackLocked(name, err)
	}
	if err := l.fs.syncDir(filepath.Dir(l.path)); err != nil {
		f.Close()
		os.Remove(l.path)
		return l.putBackLocked(name, err)
	}
	l.file.Close()
	l.file, l.size, l.renamedOpen = f, 0, ""
	l.rotations.Add(1)
	if l.maxFiles > 0 {
		for _, old := range rotated[:max(len(rotated)-l.maxFiles, 0)] {
			if err := os.Remove(old); err != nil && !errors.Is(err, fs.ErrNotExist) {
				l.logger.Error("audit log: removing a rotated file beyond --audit-log-max-files failed", "file", old, "err", err)
			}
		}
	}
	return nil
}

// putBackLocked renames the open file, renamed to name, back to l.path after
// a rotation failed with err; if that fails, lines go on to name and the
// next rotation does not rename it again.
func (l *Log) putBackLocked(name string, err error) error {
	if berr := l.fs.rename(name, l.path); berr != nil {
		l.renamedOpen = name
		return fmt.Errorf("%w (and putting it back: %v; lines go on to %s)", err, berr, name)
	}
	l.renamedOpen = ""
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// lastLineBefore is the last line of the newest of path's rotated files
// (nil if there is none), for a FILE that is missing or empty: a crash
// after a rotation renamed it.
func lastLineBefore(path string) ([]byte, error) {
	rotated, err := RotatedFiles(path)
	if err != nil || len(rotated) == 0 {
		return nil, err
	}
	newest := rotated[len(rotated)-1]
	f, err := os.Open(newest)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	last, _, err := tail(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", newest, err)
	}
	return last, nil
}
