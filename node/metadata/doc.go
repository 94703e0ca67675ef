// Package metadata is the cluster's shared picture (DESIGN §3): the records
// of the metadata log, the immutable-by-version Image they build, the Store
// that applies committed raft entries to it, and the active controller's
// decisions as pure functions from an Image and an event to records.
//
// Nothing here starts a goroutine, opens a socket or reads a clock.
//
// # Entry format
//
// A raft entry of the metadata log holds one or more records, applied
// atomically (every node sees the image after the whole entry). Each record is
//
//	+------+---------+------------------+----------------------+
//	| type | version | body length (BE) | body (msgpack)       |
//	| u8   | u8      | u32              | body-length bytes    |
//	+------+---------+------------------+----------------------+
//
// repeated until the entry ends. An empty entry holds no record. The body is
// the msgpack encoding of the record's struct (field tags below are part of
// the format: add fields, never rename tags). Decoding checks every length
// against the bytes present before allocating (msgpack/v5's own guard is
// broken, upstream #401); trailing bytes inside a body are an error.
//
// Record types (RecordType) and their current version (all 1):
//
//	1  ControllerMarker        {controller, term}: written by a newly elected controller
//	2  BrokerRegistered        {id, addr, inc, ctrl, mv, rack}
//	3  BrokerFenced            {id, inc}
//	4  BrokerUnfenced          {id, inc}
//	5  BrokerControlledShutdown{id, inc}
//	6  TopicCreated            {name, id, partitions, rf, min_isr, configs}
//	7  PartitionCreated        {t, tid, p, replicas, isr, leader, epoch, pepoch, elr, adding, removing, lost}
//	8  PartitionChange         {t, tid, p, replicas, isr, leader, epoch, pepoch, elr, adding, removing, lost}
//	9  TopicDeleted            {name, id}
//	10 ProducerIDBlock         {broker, start, len}
//	11 TopicConfigChanged      {name, id, set, del, min_isr, rf}: configs set and deleted, min ISR, replication factor (0 = unchanged)
//	12 ClusterConfigChanged    {set, del}: cluster configs (cluster_config.go) set and deleted
//	13 BrokerUnregistered      {id, inc}: a fenced broker holding no replica removed (unregister.go)
//	14 GroupOffsetsCommitted   {g, ts, o: [{t, tid, p, o, e, m}]}: a consumer group's committed offsets (groups.go)
//	15 GroupDeleted            {g, exp}: a group removed, on request or by offsets.retention.ms (groups.go)
//	16 ACLsCreated             {acls: [{pr, rt, pt, n, op, pm}]}: ACL bindings (wire.ACLBinding) added (acls.go)
//	17 ACLsDeleted             {acls: [{pr, rt, pt, n, op, pm}]}: ACL bindings removed (acls.go)
//	18 ClientQuotasChanged     {entries: [{pr, set, del}]}: client quotas (wire.QuotaEntry) set and deleted per principal, "" the default (quotas.go)
//
// Record type 11 was added after the others; logs written before it hold
// none and decode as before. A TopicCreated may hold config keys that new
// requests refuse (ValidateNewConfigs): they were accepted before, and
// apply, snapshot and load as they are.
//
// A topic grows (CreatePartitions) by an entry of PartitionCreated records
// alone, one per new partition in index order, for the topic's existing id:
// no record type of its own, so logs and snapshots written before the
// feature read as before (see create_partitions.go).
//
// The elr (eligible leader replicas, KIP-966; election.go), adding and
// removing (a reassignment in progress; reassign.go) and lost (replicas
// that lost their storage as the last ISR member, only with an empty ISR;
// election.go) fields of partition records were added later and are
// omitted when empty: logs and snapshots written before them decode as
// partitions without them.
//
// # Applying records
//
// Records are conditional so that a decision based on a stale image (e.g. an
// entry proposed by a deposed controller that still commits) is harmless: it
// is rejected, identically on every node, and only the metadata offset
// advances. A BrokerFenced/Unfenced record must name the broker's current
// incarnation; a PartitionChange must carry partition epoch = current + 1 and
// a leader epoch not below the current one; a ProducerIDBlock must start at
// the next unallocated id; a TopicCreated must not reuse a live name; a
// TopicConfigChanged must name the topic's current id and keep min ISR
// within [1, RF] (RF within [1, 16]); a GroupOffsetsCommitted must name
// existing partitions of the topics' current ids; an ACLsCreated must add
// only bindings not held yet, an ACLsDeleted remove only held ones. A
// ClientQuotasChanged is not conditional (its values replace, its deletions
// of keys not set do nothing): it is rejected only when invalid or when the
// image would then hold quotas of more than wire.MaxQuotaEntities entities.
//
// # Snapshot format
//
// Snapshot bytes are a 1-byte format version (1) followed by the msgpack
// encoding of snapshotV1: brokers sorted by id, topics sorted by name, configs
// (a topic's, and the cluster's, omitted when there are none) as sorted
// key/value pairs, groups sorted by name with their offsets sorted by topic
// and partition (omitted when there are none), ACL bindings sorted by
// resource type, name, pattern type, principal, operation and permission
// (acl.Compare; omitted when there are none), client quotas sorted by
// principal, the default ("") first, each with its values as a map of
// sorted keys (omitted when there are none). The encoding is canonical, so Image.Hash (SHA-256
// of the snapshot encoding with the offset zeroed) is stable across nodes.
package metadata
