// Package raftnode runs one member of the metadata raft group (etcd raft v3.7)
// and stores its log in <data-dir>/__cluster_metadata-0/.
//
// # The Ready loop
//
// A Node owns a raft.RawNode and drives it from one goroutine (loop.go). Every
// input — ticks, messages from peers, proposals, conf changes, peer reports —
// is applied to the RawNode on that goroutine; then each Ready is handled as
// raft's doc.go prescribes, in order:
//
//  1. persist: install the snapshot (if any), append the entries (discarding
//     any conflicting uncommitted entries at and after the first new index),
//     fsync when Ready.MustSync, then write the hard state;
//  2. send the messages (marshalled on the loop, queued per peer);
//  3. apply the snapshot and the committed entries in order: EntryNormal to
//     StateMachine.Apply, EntryConfChange/V2 to RawNode.ApplyConfChange;
//  4. Advance, and repeat while raft has more.
//
// raft's asynchronous-storage-writes mode is not used. A Ready that the
// disk has no room for freezes the node until it can be persisted
// (diskfull.go); any other storage failure stops it. PreVote and CheckQuorum
// are on. Defaults: a 50 ms tick, elections after 10–19 ticks (0.5–1 s without
// a leader), a heartbeat every tick.
//
// Proposals are wrapped in an envelope carrying a cluster-unique id
// (envelope.go), so that Propose returns when its own entry has been applied
// here. A leader learns its proposals' log indexes from the Ready that follows
// them, and so also sees conf changes raft refused (replaced by an empty
// entry). A proposal fails with ErrProposalDropped when raft refuses it (no
// leader, a transfer in progress, or — unless Config.ForwardProposals — made
// on a follower), or when the leader changes before it is applied (it may
// then still commit: proposals must be safe to re-derive or repeat).
//
// # Transport
//
// Raft messages travel on quic session streams of the node's endpoint (frame
// type FrameType = wire.TypeRaftMessage = 24): one outbound stream per peer,
// fed by one goroutine with a bounded queue (transport.go). Messages to a peer
// are batched into frames (at most 256 messages or about 1 MiB) and sent in
// order. Each frame's msgpack body is raftFrame{From, To, Msgs [][]byte} with
// every message protobuf-encoded. A full queue, a failed dial or a failed send
// drops the messages and calls ReportUnreachable; a MsgSnap is reported with
// ReportSnapshot(SnapshotFinish) once sent, SnapshotFailure if dropped. The
// receiving side rejects frames and messages not addressed to it, checks
// entries in appends and the envelope of snapshots, and steps the rest into
// raft. Under mutual TLS a frame's
// sender (From, which every message in it must carry) must be the node id in
// the peer's node certificate (the node's endpoint admits raft streams only
// from node certificates at all); otherwise the stream is ended with
// quic.CodeClusterAuthorizationFailed. A snapshot travels in one
// message, so the metadata image must stay below the endpoint's frame limit
// (16 MiB by default).
//
// # Membership
//
// Voters (Config.Voters, from --controllers) bootstrap identically: entries
// 1..n are ConfChangeAddNode for each voter in id order, with the voter's
// address in the context. Every voter must be given the same list. After a
// restart the addresses in Voters win over those the log and the snapshot
// remember (a moved controller is found once the nodes restart with the new
// list); membership itself comes from the log only, so a voter left out of
// the list at a restart is still a voter: if elected, it transfers
// leadership to a listed voter (only listed nodes run a controller). A node not
// in Voters starts with no configuration and does nothing until the leader
// adds it with AddLearner (ConfChangeAddLearnerNode carrying its address);
// it then receives the log (or a snapshot) like any follower, but never votes.
// RemoveLearner (ConfChangeRemoveNode) takes a learner out again (an
// unregistered broker); the removed node is not told, and a later
// AddLearner of the same id catches it up from where its log ends.
// TransferLeadership hands leadership to another voter (controlled shutdown).
//
// # On-disk layout of __cluster_metadata-0
//
//	__cluster_metadata-0/
//	  00000000000000000001.log      segment files of the entry log (package
//	  00000000000000000001.index    segment), offset i = raft index i; the
//	  ...                           log starts at offset 1
//	  raft-hardstate                raft HardState (term, vote, commit)
//	  snapshot-<index>-<term>.snap  state machine snapshots, the newest two;
//	                                index and term are 20-digit decimals
//	  rejoin-guard                  present while the rejoin guard is on;
//	                                holds its nonce, 32 lowercase hex
//	                                characters (empty from older builds;
//	                                see Lost storage below)
//	  scrub-log-end                 between a scrub's find and the repair:
//	                                the log's last entry, start and this
//	                                node's role then (scrub_logend.go)
//
// Entry log: each raft entry is one record batch holding one record. The
// batch's base offset is the entry's index, its leader-epoch field the entry's
// term (capped at 2^31-1). The record's key is version (1 byte, = 1) | entry
// type (1 byte) | term (uvarint, exact); its value is the entry's data as raft
// has it: an envelope for normal entries, a protobuf ConfChange for conf
// changes (see envelope.go and entrylog.go). Entries are appended without
// waiting for the disk and flushed once per Ready before any message leaves.
// An entry that conflicts with the leader's log is removed with TruncateTo
// along with everything after it.
//
// Hard state: a 33-byte file replaced atomically (temporary file, fsync,
// rename, fsync directory): "PLHS" | version 1 | term | vote | commit (uint64
// big-endian) | CRC-32C of the preceding bytes (hardstate.go). It is written,
// before any message of the Ready leaves, whenever the term or vote changes; a
// change of the commit index alone is written with the next term or vote
// change, or on Close (after a crash the commit index is re-learned from the
// leader, and recovery raises it to the snapshot index). So a Ready that only
// appends entries costs one fsync, of the log.
//
// Snapshot: "PLSN" | version 1 | index | term | payload length | payload |
// CRC-32C of everything before it (snapfile.go), written atomically like the
// hard state. The payload is a protobuf raftpb.Snapshot (index, term,
// ConfState) whose Data is raftnode's snapshot envelope: the peer addresses
// known, then the state machine's own snapshot bytes.
//
// Snapshots and compaction: after every SnapshotEvery applied entries the
// state machine is snapshotted at the applied index, the file is written, the
// older files beyond the newest two are removed, and the log is compacted with
// DeleteBefore so that CatchUpEntries entries up to the snapshot stay
// available to followers that lag slightly (raft's first index becomes
// snapshot-CatchUpEntries+1; the entry before it is kept for its term). A
// follower further behind receives the snapshot; it writes the file and
// restarts its log at snapshot+1 with TruncateFullyAndStartAt. Before raft
// sees a received snapshot, the state machine checks it (SnapshotChecker):
// one it would not restore is dropped, nothing written, and the follower
// keeps its state and runs on behind, naming the refusal in Status.
//
// # Recovery
//
// Start loads the newest snapshot file that decodes and connects to the log
// (older ones are tried if the newest is damaged), the hard state and the log
// (segment recovery has already cut a torn tail). If the log ends before the
// snapshot, or its entry at the snapshot's index has another term, the log is
// restarted after the snapshot; a gap between snapshot and log is an error.
// The hard state's commit index is raised to the snapshot index and to the
// last bootstrap entry (conf changes in term 1 from index 1: only Bootstrap
// writes term 1, and it commits them), and capped at the last index; a term older than the last entry's is raised to it. The state
// machine is restored from the snapshot before Start returns; the loop then
// re-applies the committed entries after it.
//
// # Lost storage: the rejoin guard
//
// Raft's safety rests on every voter keeping what it acknowledged: its log
// entries and its vote. A voter whose directory is wiped (disk replaced,
// operator rm -rf) and that restarts with the same Voters bootstraps an
// empty log, indistinguishable from a first start, and would vote at once:
// with voters A, B, C, entries committed on A and B, B wiped and A down, B's
// vote elects C, which lacks them, and C's entries overwrite them (KIP-853's
// problem; TestWipedVoterDoesNotLoseCommittedEntry). B may also vote a second
// time in a term it had voted in.
//
// Config.RejoinGuard (set by package node for controllers) makes a voter
// that starts with empty storage vote-guarded: the marker file rejoin-guard
// is written before its bootstrap entries; while it is on, the node's
// outgoing MsgVote, MsgPreVote, MsgVoteResp and MsgPreVoteResp are dropped
// and incoming MsgTimeoutNow is ignored (message loss is always safe in
// raft), so it cannot elect anyone, itself included. It still appends,
// acknowledges and applies what the leader sends: what it acknowledges now it
// has. The guard lifts, and the marker is removed, once the caller has given
// a target with CatchUpTo and the node's commit index and term have reached
// it. The caller (node/rejoin.go) computes the target from the other voters'
// last log index and term, asked from enough of them that every majority
// that could have committed an entry or elected a leader with the lost vote
// has a member among them; the commit index is learned from a leader elected
// without this node's vote, whose log holds every committed entry. The
// marker keeps a node guarded across restarts until lifted (its removal is
// not synced: a crash can only make the node catch up once more).
//
// The marker holds a nonce, 16 random bytes drawn when the guard starts
// (Status.GuardNonce): it names this storage. LiftGuard lifts the guard at
// once, with no target, for the node's own nonce only: the caller does so
// when another voter vouches that it saw this nonce at the cluster's first
// start, before any leader was elected (node/rejoin_answers.go). The storage
// then held only the bootstrap entries, and an unchanged marker means the
// storage has been kept since, so it holds everything the node acknowledged.
// A wipe draws a new nonce; a marker without a valid nonce never matches.
//
// A voter whose log was lost also breaks etcd raft's assumption that a
// follower's match index never goes back (lostlog.go): the leader's heartbeat
// commit index beyond the follower's log is clamped (raft panics on it) and
// answered with a rejection naming the follower's real log end, and a leader
// whose follower rejects below its match index hands leadership to another
// voter, since etcd raft never probes below match+1: the most up-to-date one
// heard from within the last election timeout, each voter once before any
// again (a vote-guarded voter ignores the transfer). This applies to
// learners (brokers) that lost their log too.
//
// Scrub (scrub.go, scrub_repair.go): ScrubNow, called by package node on the
// partitions' pacing, checks the entry log (sealed segments, and the active
// one up to the applied index) and the snapshot files off the loop. A
// corrupt entry stops the node (Err wraps segment.ErrScrubCorrupt); the next
// Start copies the segments aside and writes the guard's marker, with a new
// nonce, before the open truncates the log at the entry: the repaired voter
// is vote-guarded as one whose log was lost (a single voter refuses to start:
// ErrScrubOnlyVoter; a learner is not guarded). If the repaired log still
// ends at the entry it ended at when the scrub stopped the node
// (scrub_logend.go, scrub_sound.go), nothing acknowledged was taken out and
// the guard is undone. A corrupt snapshot file is rewritten from memory.
//
// Not covered: storage lost partially (a log cut short but not empty, other
// than by a scrub's repair; a missing hard state next to a log, a log
// removed with the marker kept); a
// majority of voters losing storage;
// the marker's own directory being restored from an old backup (a restored
// log is not empty and is trusted as it is).
package raftnode
