package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// IncarnationFile in the data directory holds the incarnation of the last
// process started on it (decimal, one line).
const IncarnationFile = "incarnation"

// nextIncarnation returns the incarnation of a process starting on dataDir
// (whose lock the caller holds) and records it there. It is the broker's
// epoch: the controller refuses a registration, and an ISR expansion on the
// strength of fetches, from an incarnation older than the registered one, so
// incarnations must grow with every start. The clock in nanoseconds gives
// that across data directories; the recorded value keeps it when the clock
// steps back between two starts on the same directory. Always > 0 (0 means
// unknown on the wire).
//
// The earlier formula, UnixNano<<8 | random, overflowed int64 (it wraps
// every 417 days and is negative today), so it did not order processes.
func nextIncarnation(dataDir string, now time.Time) (int64, error) {
	path := filepath.Join(dataDir, IncarnationFile)
	inc := max(now.UnixNano(), 1)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		last, perr := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if perr != nil {
			return 0, fmt.Errorf("node: %s: %w", path, perr)
		}
		inc = max(inc, last+1)
	case !os.IsNotExist(err):
		return 0, fmt.Errorf("node: %w", err)
	}
	if err := writeFileSynced(path, []byte(strconv.FormatInt(inc, 10)+"\n")); err != nil {
		if isNoSpace(err) {
			// A full disk must not keep the node from starting (a
			// supervisor would restart it in a loop). Unrecorded, the
			// incarnation is still newer than every earlier one, by the
			// clock or the file; only if the clock steps back before the
			// next start can that start pick an older one, which the
			// controller refuses until the clock passes it (a delay, never
			// a stale registration accepted). The caller records it once
			// there is room (diskfull.go).
			return inc, fmt.Errorf("%w: %w", errIncarnationNotRecorded, err)
		}
		return 0, fmt.Errorf("node: recording incarnation: %w", err)
	}
	return inc, nil
}

// NewStorageFile in the data directory marks storage that held no earlier
// process's data at a start (no incarnation file: a wiped or replaced disk,
// or the node's first start) until a registration saying so has been
// accepted: the controller then takes this broker out of the ISRs that its
// earlier incarnations were left in (metadata.dropRestartedReplica),
// so that its empty logs are never elected on their strength. The marker
// outlives a crash before that registration; it is empty.
const NewStorageFile = "new-storage"

// markNewStorage runs before nextIncarnation: it writes the marker when
// dataDir has no incarnation file, and reports whether the marker is there.
// A full disk that has no room for the marker has none for the incarnation
// either, so the next start finds the directory new again.
func markNewStorage(dataDir string) (bool, error) {
	marker := filepath.Join(dataDir, NewStorageFile)
	if _, err := os.Stat(marker); err == nil {
		return true, nil
	} else if !os.IsNotExist(err) {
		return false, fmt.Errorf("node: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, IncarnationFile)); err == nil {
		return false, nil
	} else if !os.IsNotExist(err) {
		return false, fmt.Errorf("node: %w", err)
	}
	if err := writeFileSynced(marker, nil); err != nil && !isNoSpace(err) {
		return false, fmt.Errorf("node: recording new storage: %w", err)
	}
	return true, nil
}

// errIncarnationNotRecorded: nextIncarnation chose an incarnation but the
// disk had no room to record it.
var errIncarnationNotRecorded = errors.New("node: disk full: incarnation not recorded")

// recordIncarnation writes inc to dataDir's incarnation file.
func recordIncarnation(dataDir string, inc int64) error {
	return writeFileSynced(filepath.Join(dataDir, IncarnationFile), []byte(strconv.FormatInt(inc, 10)+"\n"))
}

// isNoSpace reports whether err is a write refused for lack of space.
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// writeFileSynced replaces path with data durably: a synced temporary file
// renamed over it, then the directory synced.
func writeFileSynced(path string, data []byte) error {
	return writeFileSyncedMode(path, data, 0o644)
}

// writeFileSyncedMode is writeFileSynced with the file's mode.
func writeFileSyncedMode(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	os.Remove(tmp) // an earlier attempt's, perhaps of another mode
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
