// Package chaos answers "what happens if a broker fails?" with a run anyone
// can repeat: a real 3-node cluster of paymentlog processes under load, a
// nemesis that injects faults on a seeded schedule, and a checker that reads
// everything back and names every broken promise.
//
// # The run (Run)
//
//  1. Start a local cluster (bench/localcluster: separate processes, mutual
//     TLS, one data directory each; every node scrubs its sealed segments
//     every second at full speed, so that a rot is found at once; at the
//     scrub's find the even ids start again in their process, the odd ids
//     exit). As root, with iproute2, every node runs
//     in its own network namespace on a bridge (localcluster.NetNS), so one
//     can be cut off; otherwise partitions are skipped and the report says why.
//  2. Create topic "chaos": 3 partitions, RF 3, min ISR 2 (compacted with
//     Config.Compact: see below).
//  3. Workload: Producers idempotent acks=all producers, each on its own
//     connection, write records whose value names them: "p<producer>-<seq>"
//     (Payload), record seq to partition seq%3; Consumers consumers read
//     every partition from offset 0, continuously. Every send, outcome
//     (acked at offset O / failed / indeterminate / pending) and read is kept.
//  4. Nemesis: faults one after another (Schedule), each healed before the
//     next, with the cluster given up to 20s to be ready again.
//  5. Heal everything, keep writing for 2s more, close the producers (every
//     record resolves), wait until every partition has its full replica set
//     in the ISR and every replica reports the same log end and HW
//     (Converged).
//  6. Read every partition back from its leader (the reference log), let the
//     consumers catch up, SIGKILL the nodes and scan every replica's segment
//     files raw (ScanPartition: no recovery, nothing written).
//  7. Check the history (Check) and print the report.
//
// # Faults (Kind)
//
// kill-node, kill-leader (of a partition chosen by the schedule, resolved when
// the fault runs), kill-controller (the active controller): SIGKILL, then a
// restart after Hold. pause: SIGSTOP for longer than the session timeout,
// then SIGCONT. partition: the node's link goes down for Hold, then up.
// torn-tail rides on a kill: before the restart, the last segment of one of
// the dead node's partitions (or of its metadata log) is damaged, or (mode
// rot-sealed) a batch of one of its sealed segments, or (mode wipe) one
// partition's directory is removed whole.
//
// Link faults (NetKinds; only when asked for: --kinds net or by name, not in
// the default "all"), made with tc in the victim's namespace
// (localcluster.NetNS.OneWay, Cut, Degrade; undone by Restore, and by
// HealAll / HealNetwork, also when the run is cancelled): one-way (the
// victim cannot send, or cannot receive, for Hold), bridge (the victim and
// one peer lose each other, both still reach the third node and the
// clients), degrade (for 2–6 session timeouts the victim's link, both ways,
// loses 5–30% of the packets, duplicates up to 5%, and queues the rest
// behind a 1–6 Mbit/s bound of 20–200ms that up to 25% bypass, so they
// arrive late and out of order). Like pauses and partitions they aim at a
// random node, the active controller or a partition leader. The summary
// gives, by kind, the longest unavailability window that began while one of
// its faults was in effect.
//
// shrink (only when asked for by name) lowers the topic's replication
// factor to 2 for Hold (0.5–2.5 session timeouts) and raises it back to 3
// (HealAll too, should a run end in between): each partition drops a
// replica once the ones it keeps are in sync, never its leader, and later
// copies its whole log onto that broker again while writes go on and the
// next faults come.
//
// Faults are counted by what they did (Result.Counts): a kill-leader or
// kill-controller that finds no leader or controller kills a random node and
// counts as a kill-node; such fallbacks (pauses and partitions aimed at a
// leader or the controller too) are also counted apart (Result.Fallbacks).
// A torn tail counts only if it changed at least one byte of the file
// (TornResult.Changed): a cut at the data's end or an overwrite of nothing
// is reported as not applied.
//
// The schedule is drawn from the seed alone (NewSchedule): the same seed
// yields the same kinds, victims choices, timings and torn-tail parameters,
// so a failing seed replays its schedule. It comes in decks; each deck holds
// every kind PerKind times and PerKind torn tails, shuffled. A bounded run is
// one deck; a timed run (Config.Duration) deals decks until time is up.
//
// # Torn tails: what may be damaged, and why that is fair
//
// With fsync=always a node flushes a batch before it acknowledges it (as a
// leader) or reports it fetched (as a follower), so a real power loss can
// only take bytes that no acknowledgement depended on. The modes:
//
//   - cut-unacked (realistic): truncate the file, or zero it (a preallocated
//     file after a power loss), from a random byte inside the batches that
//     start at or after the first offset that no acknowledged record can
//     occupy (past every acked offset the producers saw and every HW a
//     running node reports). Without such batches it becomes garbage-tail.
//   - garbage-tail (realistic): a partial batch — a plausible header prefix
//     and random bytes — right after the last whole batch. The only mode used
//     on the metadata log (raft entries are flushed before any message
//     leaves, so bytes after them are never relied on).
//   - cut-acked and overwrite (a damaged disk): cut at a random byte of the
//     last segment's data, or overwrite its last 1–64 bytes, acknowledged or
//     not. This loses flushed, acknowledged data on ONE replica. The promise
//     is "no acknowledged record is lost as long as one in-sync replica
//     survives", so these run only when another running node is in the
//     partition's ISR at that moment (it holds every committed record);
//     otherwise they degrade to cut-unacked. The system must then not let the
//     damaged node lead or be counted in sync before it has re-fetched what
//     it lost. Faults are sequential, so at most one replica is damaged at a
//     time.
//   - rot-sealed (a damaged disk, silent): flip 1–8 bytes (drawn from the
//     fault's seed) inside the records of a random batch of a random sealed
//     segment (any but the last), reported as "rot" with the batch's base
//     offset. Same precondition and fallback as cut-acked; a partition
//     without a sealed segment holding records gets an overwrite instead.
//     A restart trusts sealed segments (they are below the recovery
//     point), so only the node's scrubber finds it: the scrub must stop
//     the node, whose next start truncates at the batch and fetches the
//     rest from the leader. Both ways of that start run on every run
//     (restartsInProcess): a node with an even id keeps `node start`'s
//     default, --log-scrub-restart, and starts again in its own process,
//     which the nemesis reads from the node's log (the line that says it
//     starts the node again in this process, with the scrub's error naming
//     the partition); a node with an odd id runs with
//     --log-scrub-restart=false, exits, and the nemesis starts it again.
//     Either stop is the repair working (in the schedule, SCRUB REPAIR
//     node N restarted in its process, or SCRUB REPAIR node N stopped;
//     the nemesis does not start a node that restarted in its process),
//     not a crash, and the cluster counts as ready after the fault only
//     once the node is back; until then no other mode may damage
//     acknowledged data (they degrade to cut-unacked), so that one replica
//     at most is damaged at a time. A process that restarted 3 times in
//     an hour exits at the next find (cli/node_restart.go): that exit is a
//     repair too.
//
// The other modes target the last segment only (the issue's "cut the last
// segment of a stopped node"): a cut there is what a power loss does, while
// a sealed segment with a bad batch is corruption, which only rot-sealed
// makes, for the scrubber to find.
//
// # Checker (Check)
//
// Safety (any one fails the run): lost-write (acknowledged, absent from the
// reference log), inconsistent-offset (one offset, two different records
// among acknowledgements, consumer reads and the reference log),
// duplicate (a record at two offsets or in two partitions), read-skipped and
// read-backwards (a consumer's offsets must be exactly consecutive),
// replica-divergence (an in-sync replica's records or batches — base, last,
// epoch, CRC, size — differ from the reference below the HW, it lacks or
// repeats an offset there, or its files hold corruption), reordered (a producer's
// records in a partition out of sequence order), failed-but-written (the
// client said "certainly not written" but it is there), phantom-record
// (never produced, or produced for another partition), read-diverged (a
// leader told a consumer that its log no longer holds records the consumer
// read, client.ErrLogTruncated: consumers read only below the HW, so a
// committed record changed or vanished; the consumer reads that partition
// no further and is not also reported behind), unverified (a
// partition could not be read back, or only part of the way to its HW; no
// in-sync replica's files could be compared with it; no record was
// acknowledged in it, so no lost write could show; a record written or
// read in a partition the history does not have). Liveness (also fails the
// run): not-converged (replicas never all back in sync after healing),
// node-crashed (a node stopped on its own: its process exited, or started
// the node again in it; except a node whose output says its scrub found a
// corrupt batch in a partition that a rot-sealed fault damaged on it and
// no earlier stop repaired: a scrub repair, counted in the report as
// "scrub repairs: N of M rots, K restarted in the node's process and J by
// an exit", each rot listed with its repair; a rot never found and still
// in the files at the end is corruption in them, a replica-divergence), consumer-behind (a consumer
// never read a partition up to its final HW, so skips in the rest would go
// unseen), no-faults (the nemesis applied no fault at all: every one
// skipped or failed, or none scheduled, so the run tested nothing) and
// writes-stalled (the producers keep writing for a moment after the last
// fault is healed; a partition that acknowledged none of those records, or
// got none, never resumed taking writes), and live-port-fence (a process
// fenced because its port was found closed, which then heard from the
// controller that it was fenced: it was alive, paused or cut off; only a
// dead process's port refuses datagrams; port_fences.go).
//
// # Compacted runs (Config.Compact, --compact)
//
// The topic gets cleanup.policy=compact, segment.bytes 1 MiB,
// min.cleanable.dirty.ratio 0 and delete.retention.ms 1000, and the nodes
// a --log-cleaner-interval of 500ms, so every replica's cleaner removes
// records while the faults go on. Each record gets a key drawn from the
// seed: one of 64 hot keys per partition (each rewritten every fraction of
// a second, so the cleaner has plenty to remove), or for one record in
// eight one of 4096 cold keys (rewritten rarely: their latest records stay
// in old segments that the cleaner rewrites again and again, and their
// tombstones outlive delete.retention.ms); 2% are tombstones, a null
// value, the record named by its HeaderID header instead of its Payload. The cleaner
// may remove any record superseded by a later one of its key, and
// tombstones; the checker (checker_compact.go) allows exactly that, in the
// final log, in each in-sync replica's files and in what consumers and
// members read, and keeps every other check. One more safety anomaly:
// lost-latest (a key's latest record, not a tombstone, absent from the
// final log: compaction's promise that a key's latest value is never
// lost); lost-write is then an acknowledged record absent while the final
// log holds no later record of its key. The report counts the
// acknowledged records the cleaner removed, and warns when there are none
// (the run did not test compaction).
//
// Unavailability as the producers saw it: per partition, each stretch in
// which records were being written and no acknowledgement arrived (a failed
// record does not end one); the longest are reported with their start
// times, to be matched with the fault schedule.
package chaos
