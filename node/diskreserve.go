package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"paymentlog/segment"
)

// The reserve file: room kept back so that retention can free space on a
// disk with no free block.
//
// A deletion of segments first writes the producer snapshot and the
// log-start checkpoint (node/broker/retention.go, segment/deletion.go),
// which need blocks; on a disk with none it failed, every pass, and the
// operator had to free a few KiB by hand. As storage engines do (CockroachDB's
// EMERGENCY_BALLAST, etcd's and MongoDB's preallocated space), the node
// keeps diskReserveBytes allocated in <data-dir>/.disk-reserve: created at
// start while there is room, removed (broker.Config.ReleaseDiskReserve) when
// a deletion finds the disk full, so that the deletion can be tried again
// and free whole segments, and created again once the node has room to
// resume (diskfull.go).
//
// Its size: what retention writes before its first deletion frees a
// segment, with a wide margin. That is, for one partition, the producer
// snapshot (41 bytes plus at most 139 per idempotent producer: 5 batches of
// 24 bytes and 19 of id, epoch, timestamp and count), its temporary file
// before the rename, the log-start checkpoint (one 4 KiB block) and a block
// or two of a directory that grows (checkpoint and *.deleted names): 1 MiB
// is 256 blocks of 4 KiB, a snapshot of some 7,000 producers at the
// five-batch maximum (each partition's first pass frees at least one sealed
// segment, so the others then have room). It is allocated with fallocate
// (no bytes written); on a file system that cannot reserve blocks it holds
// none and the release frees nothing.
const (
	diskReserveFile  = ".disk-reserve"
	diskReserveBytes = 1 << 20
)

// ensureDiskReserve creates the reserve file unless it exists. A failure
// (no room) is returned; diskfull.go tries again later.
func (n *Node) ensureDiskReserve() error {
	d := &n.disk
	d.reserve.Lock()
	defer d.reserve.Unlock()
	if d.reserve.present {
		return nil
	}
	fs := n.logFS()
	path := filepath.Join(n.cfg.DataDir, diskReserveFile)
	if f, err := fs.OpenFile(path, os.O_RDONLY, 0); err == nil {
		size, err := f.Size()
		f.Close()
		if err == nil && size >= diskReserveBytes {
			d.reserve.present = true
			return nil
		}
	}
	tmp := path + ".tmp"
	err := func() error {
		f, err := fs.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o644)
		if err != nil {
			return err
		}
		err = f.Allocate(0, diskReserveBytes)
		if err == nil {
			err = f.Truncate(diskReserveBytes)
		}
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = fs.Rename(tmp, path)
		}
		if err == nil {
			err = fs.SyncDir(n.cfg.DataDir)
		}
		return err
	}()
	if err != nil {
		_ = fs.Remove(tmp)
		return fmt.Errorf("node: creating the disk reserve %s: %w", path, err)
	}
	d.reserve.present = true
	return nil
}

// releaseDiskReserve removes the reserve file, if the node holds one, and
// reports whether it did: broker.Config.ReleaseDiskReserve.
func (n *Node) releaseDiskReserve() bool {
	d := &n.disk
	d.reserve.Lock()
	defer d.reserve.Unlock()
	if !d.reserve.present {
		return false
	}
	fs := n.logFS()
	path := filepath.Join(n.cfg.DataDir, diskReserveFile)
	if err := fs.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		n.log.Error("disk full: removing the disk reserve", "path", path, "err", err)
		return false
	}
	d.reserve.present = false
	// The blocks are free once the removal commits; the directory fsync
	// commits it (ext4 retries an allocation after a commit anyway).
	_ = fs.SyncDir(n.cfg.DataDir)
	n.log.Warn("disk full: released the disk reserve so that retention can delete segments; it is created again once there is room",
		"path", path, "bytes", diskReserveBytes)
	return true
}

// logFS is the file system of the partition logs and the data directory's
// own files.
func (n *Node) logFS() segment.FS {
	if n.cfg.LogFS != nil {
		return n.cfg.LogFS
	}
	return segment.OSFS{}
}
