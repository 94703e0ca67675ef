// Package bench is `paymentlog bench`: replication throughput and latency,
// leader and controller failover, and the raw QUIC ceiling they are compared
// with, measured on a cluster it starts itself (package localcluster) or on an
// existing one.
//
// Phases, in order (Mode selects one or all):
//
//   - transport: bulk bytes over one QUIC connection between two endpoints on
//     this machine (quic-go directly, TLS 1.3, the transport's flow-control
//     windows), before the cluster starts: the ceiling. Throughput is reported
//     as a share of it: payload MB/s ÷ (raw MB/s ÷ replication factor).
//   - throughput: producers at full speed for a duration (or a record count),
//     then one consumer reading it all back (consume throughput), then a paced
//     run at half the measured rate with a consumer following the end, for
//     produce and end-to-end latency. A metadata watcher counts ISR shrinks,
//     expansions, leader changes and fencings meanwhile (0 expected).
//   - failover: a paced acks=all load on a topic; K times, SIGKILL partition
//     0's leader and time fencing, the new leader and the first acknowledged
//     write for that partition; restart the node and time its return to the
//     ISR. Afterwards every acknowledged record is read back and checked.
//   - controller-failover: K times, SIGKILL the active controller and time
//     until a topic creation commits.
//
// Failover times run from the instant before the kill starts: exact for the
// local cluster (the bench sends the SIGKILL), upper bounds with --kill-cmd
// (killinstant.go).
//
// Every record value carries a 20-byte header (payload.go): its produce time,
// producer index and sequence number, so a consumer measures end-to-end
// latency and the readback proves each acknowledged offset holds the record
// acknowledged there. The rest of a throughput record is --payload's body
// (bodies.go): random bytes, or JSON payment events (payments.go), made
// before the load starts. With --compression the producers compress their
// batches; MB/s stays payload bytes, and the report adds the bytes the
// leaders stored per payload byte (the nodes' paymentlog_produce_bytes_total
// over the run) and the CPU per payload MB.
//
// Times come from a watcher (watcher.go) that polls every node's metadata on
// its own goroutine every few milliseconds and keeps the history of metadata
// versions with their arrival times, so an event's time is when the first node
// showed it, within one poll interval.
package bench
