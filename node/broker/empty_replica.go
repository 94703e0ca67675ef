package broker

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"paymentlog/segment"
)

// EmptyReplicaFile marks, in a partition directory, a log this node created
// empty (its directory missing, or holding a deleted topic's data) while its
// incarnation was not yet registered. The node's registration names such
// partitions (wire.BrokerRegisterRequest.EmptyReplicas), as it names those
// whose directory is still missing: for them it holds nothing of what its
// earlier incarnations acknowledged, though its data directory (and with it
// the incarnation file, see node.NewStorageFile) survived. The mark keeps
// that known across a crash between creating the log and the registration;
// it is removed, durably, once a registration is accepted (Registered).
// Logs created after that are not marked: their replica joins an ISR only
// by fetching under the registered incarnation.
const EmptyReplicaFile = "empty-replica"

// partitionDir is the directory of topic-partition's log.
func (b *Broker) partitionDir(topic string, partition int32) string {
	return filepath.Join(b.cfg.DataDir, topic+"-"+strconv.Itoa(int(partition)))
}

// HoldsNothing reports whether this node holds none of the records of
// partition of topic (id topicID) from before this process: its directory
// missing or without a log, holding another topic's data, or marked
// EmptyReplicaFile by this or an earlier unregistered process.
func (b *Broker) HoldsNothing(topic, topicID string, partition int32) bool {
	fs, dir := b.fs(), b.partitionDir(topic, partition)
	names, err := fs.ReadDir(dir)
	if err != nil || !holdsPartitionFiles(names) || slices.Contains(names, EmptyReplicaFile) {
		return true
	}
	id, err := readTopicID(fs, dir)
	return err == nil && id != "" && topicID != "" && id != topicID
}

// markEmpty records, before its log is created, that dir's log starts empty
// (EmptyReplicaFile), unless this incarnation is registered already.
func (b *Broker) markEmpty(fs segment.FS, dir string) error {
	b.empty.RLock()
	defer b.empty.RUnlock()
	if b.empty.registered {
		return nil
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := segment.WriteCheckpoint(fs, filepath.Join(dir, EmptyReplicaFile), nil); err != nil {
		return err
	}
	return fs.SyncDir(b.cfg.DataDir)
}

// NewStorage tells the broker that the node's whole data directory is new
// (its registration says so, which covers every partition): logs it
// creates are not marked.
func (b *Broker) NewStorage() {
	b.empty.Lock()
	b.empty.registered = true
	b.empty.Unlock()
}

// Registered tells the broker that its incarnation's registration was
// accepted (it named the marked partitions): logs created from now on are
// not marked, and the marks of those created before are removed durably. A
// mark left behind would, at the next start, take this replica out of an
// ISR it has rejoined since by fetching everything.
func (b *Broker) Registered() error {
	b.empty.Lock()
	defer b.empty.Unlock() // no markEmpty meanwhile: its mark would stay
	b.empty.registered = true
	fs := b.fs()
	names, err := fs.ReadDir(b.cfg.DataDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var errs []error
	for _, name := range names {
		if _, _, ok := partitionDirName(name); !ok {
			continue
		}
		dir := filepath.Join(b.cfg.DataDir, name)
		if files, err := fs.ReadDir(dir); err != nil || !slices.Contains(files, EmptyReplicaFile) {
			continue
		}
		if err := fs.Remove(filepath.Join(dir, EmptyReplicaFile)); err != nil {
			errs = append(errs, err)
		} else if err := fs.SyncDir(dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// TornAtOpen reports whether the log of partition of topic (id topicID),
// open in this process, truncated a damaged tail when it was opened
// (segment.Log.TornAtOpen): the node's registration names such partitions
// (wire.BrokerRegisterRequest.TornReplicas), as what the tail held may have
// been acknowledged. false for a log not open.
func (b *Broker) TornAtOpen(topic, topicID string, partition int32) bool {
	p := b.partition(topic, partition)
	return p != nil && p.topicID() == topicID && p.log.TornAtOpen()
}
