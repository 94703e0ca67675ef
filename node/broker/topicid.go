package broker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"paymentlog/segment"
)

// TopicIDFile names, in a partition directory, the topic id its data belongs
// to (Kafka's partition.metadata, KIP-516):
//
//	version: 0
//	topic_id: <id>
//
// A topic deleted and re-created under the same name while this node was
// down leaves a directory of the old topic's records where the new topic's
// replica opens its log. Without the id the old records would be taken for
// the new topic's (a follower keeps those below the offset where the epochs
// it shares with the new leader end, a new leader serves them) and the old
// checkpointed HW with them.
const TopicIDFile = "partition.metadata"

// readTopicID returns the topic id recorded in dir ("" if none is).
func readTopicID(fs segment.FS, dir string) (string, error) {
	data, err := segment.ReadCheckpoint(fs, filepath.Join(dir, TopicIDFile))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 || strings.TrimSpace(lines[0]) != "version: 0" {
		return "", fmt.Errorf("broker: %s in %s: unknown format", TopicIDFile, dir)
	}
	id, ok := strings.CutPrefix(strings.TrimSpace(lines[1]), "topic_id: ")
	if !ok || id == "" {
		return "", fmt.Errorf("broker: %s in %s: no topic id", TopicIDFile, dir)
	}
	return id, nil
}

// writeTopicID records topicID in dir, atomically and durably.
func writeTopicID(fs segment.FS, dir, topicID string) error {
	return segment.WriteCheckpoint(fs, filepath.Join(dir, TopicIDFile),
		[]byte("version: 0\ntopic_id: "+topicID+"\n"))
}

// discardOtherTopic removes dir's files if they belong to a topic other than
// topicID (deleted and re-created under the same name while this node did
// not run). The id file goes last: a crash before it leaves a directory that
// is still recognised as the other topic's and discarded again.
func discardOtherTopic(fs segment.FS, dir, topicID string) (discarded bool, err error) {
	if topicID == "" {
		return false, nil
	}
	old, err := readTopicID(fs, dir)
	if err != nil || old == "" || old == topicID {
		return false, err
	}
	return true, removePartitionFiles(fs, dir)
}

// removePartitionFiles removes every file of a partition directory through
// fs, the topic id file last (see discardOtherTopic).
func removePartitionFiles(fs segment.FS, dir string) error {
	names, err := fs.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, name := range names {
		if name == TopicIDFile {
			continue
		}
		if strings.HasPrefix(name, segment.ScrubQuarantinePrefix) {
			// The deleted topic's segments a scrub's repair set aside
			// (segment/quarantine.go): a directory of files.
			sub := filepath.Join(dir, name)
			files, _ := fs.ReadDir(sub)
			for _, f := range files {
				if err := fs.Remove(filepath.Join(sub, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
					return err
				}
			}
		}
		if err := fs.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if err := fs.SyncDir(dir); err != nil {
		return err
	}
	if err := fs.Remove(filepath.Join(dir, TopicIDFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return fs.SyncDir(dir)
}
