// Package replica is the pure state machine of one partition replica on one
// broker: role, leader epoch, ISR, log end offset (LEO), high watermark (HW),
// follower progress and produce requests parked until the HW passes them.
//
// It does no I/O, starts no goroutines and reads no clock: the caller (package
// node/broker) feeds it events and carries out the Decisions it returns, in
// the spirit of etcd raft's Ready contract:
//
//  1. Metadata arrives: call BecomeLeader, BecomeFollower or Stop, or
//     ISRCommitted when only the ISR / partition epoch changed.
//  2. The leader appended to its log: call LocalAppend(leo) AFTER the bytes are
//     in the log (durability is the caller's business: acknowledge a produce
//     only after the log's fsync policy is met). With Config.TrackDurable,
//     call LocalDurable once the log is durable that far: the leader counts
//     itself toward the HW only up to there. A follower calls LocalAppend
//     only with durable ends.
//  3. A follower fetched: call FollowerFetch with the follower's fetch offset
//     (its LEO), last fetched epoch and incarnation. Its FetchCheck says
//     whether to serve records, or answer with an error or a diverging epoch
//     (KIP-320). A fetch from a new incarnation first drops everything the
//     follower's previous process reported (KIP-903).
//  4. Time passes: call Tick(now) periodically (a fraction of the lag time).
//     Retention deleted the front of the log (never at or above the HW), or
//     a follower raised its log start to its leader's: call SetLogStart
//     AFTER the segments are gone. Fetches below the log start are then
//     OffsetOutOfRange; a follower whose log was cut below it restarts at
//     the leader's log start (Truncated).
//  5. For every Decisions returned: complete the listed produce requests,
//     wake waiting fetchers if WakeFetchers, persist/propagate the HW, and if
//     ProposeISR is non-nil send an AlterPartition request for it, naming
//     each follower's incarnation from PendingMembers (the controller admits
//     a follower only on its registered incarnation); report the outcome
//     with ISRCommitted or ProposalFailed.
//
// The high watermark rule (hw.go) is: the smallest LEO over the ISR — during a
// pending ISR change over the larger of the committed and the proposed set —
// never decreasing, and never advancing while that set is smaller than the
// minimum ISR. While it is, parked produce requests are answered
// NotEnoughReplicasAfterAppend at once (and new ones as they park) instead
// of at their deadline: unlike Kafka, whose HW advances over the shrunken
// ISR and which sends that error with the record committed, here the record
// is not committed yet and may be once the ISR recovers, so the producer
// must treat the outcome as unknown (package client does: it retries, and a
// duplicate finds the first copy).
//
// Divergence (KIP-101/KIP-279/KIP-320): a follower reports the epoch of its
// last batch with every fetch; the leader looks that epoch up in its own
// leader-epoch cache (an EpochSource) and, if the follower's log goes beyond
// where the leader's log left that epoch, answers with the diverging epoch and
// its end offset. The follower truncates there (TruncationOffset) and fetches
// again. Followers never truncate to their HW on becoming a follower: that is
// KIP-101's data-loss bug.
package replica
