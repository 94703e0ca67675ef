package broker

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"paymentlog/segment"
)

// RemoveUnassigned deletes the partition copies in the data directory that
// keep does not name and that are not open or being opened: copies left by
// a replica moved away (a reassignment) or a topic deleted while this node
// was down. A running node deletes its copy when it applies such a change
// (StopPartition); a node that was down never sees it, and without this its
// copy would hold the disk forever.
//
// The caller must know that keep is complete up to this node's own
// registration (the controller has unfenced this incarnation, so its image
// holds every assignment made before), and must not open partitions
// concurrently: the metadata watcher calls it between its passes. A
// directory counts as a partition copy only by its name (TOPIC-N, N the
// canonical decimal, TOPIC not starting with "__", which the metadata log's
// own directory does) and its content (the topic-id file or a segment).
func (b *Broker) RemoveUnassigned(keep func(topic string, partition int32) bool) ([]string, error) {
	ents, err := os.ReadDir(b.cfg.DataDir)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, e := range ents {
		topic, part, ok := partitionDirName(e.Name())
		if !e.IsDir() || !ok || keep(topic, part) {
			continue
		}
		key := tp{topic, part}
		b.mu.Lock()
		busy := b.mu.parts[key] != nil || b.mu.opening[key] != nil
		b.mu.Unlock()
		dir := filepath.Join(b.cfg.DataDir, e.Name())
		if busy || !looksLikePartition(b.fs(), dir) {
			continue
		}
		if err := removePartitionFiles(b.fs(), dir); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, e.Name())
	}
	if len(removed) > 0 {
		if err := b.fs().SyncDir(b.cfg.DataDir); err != nil {
			errs = append(errs, err)
		}
	}
	return removed, errors.Join(errs...)
}

// partitionDirName parses a partition directory's name, TOPIC-N.
func partitionDirName(name string) (string, int32, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || strings.HasPrefix(name, "__") {
		return "", 0, false
	}
	n, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != name[i+1:] {
		return "", 0, false
	}
	return name[:i], int32(n), true
}

// looksLikePartition reports whether dir holds the topic-id file or a
// segment.
func looksLikePartition(fs segment.FS, dir string) bool {
	names, err := fs.ReadDir(dir)
	return err == nil && holdsPartitionFiles(names)
}

// holdsPartitionFiles reports whether a directory's file names include the
// topic-id file or a segment.
func holdsPartitionFiles(names []string) bool {
	return slices.ContainsFunc(names, func(name string) bool {
		return name == TopicIDFile || strings.HasSuffix(name, ".log")
	})
}
