package node

import (
	"math"
	"net/http"
	"runtime"
	"strconv"
	"time"

	"paymentlog/metrics"
	"paymentlog/node/audit"
	"paymentlog/node/broker"
	"paymentlog/node/controller"
	"paymentlog/node/replica"
)

// MetricsMaxPartitions caps the partitions /metrics lists one by one
// (paymentlog_partition_* series, in order of topic and partition): a node
// with more replicas lists the first ones and reports how many it left out in
// paymentlog_partition_metrics_omitted. The node-wide gauges (log size, max
// follower lag, under-replicated and under-min-ISR counts) cover every
// partition regardless. 1000 partitions are about 10,000 series, a few
// hundred KiB per scrape.
const MetricsMaxPartitions = 1000

// serveMetrics writes every metric in the Prometheus text format (README,
// "Metrics"). Series names of earlier versions keep their names and
// meanings (bench/ scrapes some of them).
func (n *Node) serveMetrics(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", metrics.ContentType)
	mw := metrics.NewWriter(w)
	n.writeMetrics(mw)
	if err := mw.Flush(); err != nil {
		n.log.Warn("writing /metrics", "err", err)
	}
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func (n *Node) writeMetrics(w *metrics.Writer) {
	st := n.raft.Status()
	n.mu.Lock()
	fenced := n.mu.fenced
	n.mu.Unlock()
	img := n.store.Image()

	w.Gauge("paymentlog_node_id", "This node's id.", int64(n.cfg.ID))
	w.Counter("paymentlog_node_in_process_restarts_total", "Times this process started the node again after it stopped on its own (its scrub found a corrupt batch: node start --log-scrub-restart); a supervisor counting process restarts sees none of them.", uint64(n.cfg.InProcessRestarts))
	w.Gauge("paymentlog_node_start_time_seconds", "Unix time this node (this incarnation, in-process restarts included) started.", n.startedAt.Unix())

	// The metadata log (raft).
	w.Gauge("paymentlog_metadata_offset", "Raft index of the last metadata entry applied to this node's image.", int64(img.Offset()))
	w.Gauge("paymentlog_metadata_lag_entries", "Metadata entries committed (as this node knows) and not yet applied to its image.",
		max(int64(st.Commit)-int64(img.Offset()), 0))
	w.Gauge("paymentlog_raft_term", "Raft term of the metadata log.", int64(st.Term))
	w.Gauge("paymentlog_raft_leader", "Raft leader of the metadata log (the active controller); 0 when unknown.", int64(st.Leader))
	w.Gauge("paymentlog_raft_commit_index", "Raft commit index of the metadata log as this node knows it.", int64(st.Commit))
	w.Gauge("paymentlog_raft_applied_index", "Raft index this node has applied.", int64(st.Applied))
	w.Gauge("paymentlog_raft_last_index", "Last raft index in this node's metadata log on disk.", int64(st.LastIndex))
	w.Gauge("paymentlog_active_controller", "1 on the active controller (the metadata log's raft leader).", b2i(st.IsLeader))
	// 1 while this controller started with an empty metadata log and has
	// not caught up: it does not vote (node/rejoin.go).
	w.Gauge("paymentlog_raft_vote_guarded", "1 while this controller withholds its vote until it has caught up (it restarted with an empty metadata log).", b2i(st.VoteGuarded))
	w.Gauge("paymentlog_broker_fenced", "1 while the controller has fenced this broker (it leads nothing and refuses writes).", b2i(fenced))

	n.writeControllerMetrics(w)
	n.writeBrokerMetrics(w)
	n.writeTLSMetrics(w)
	n.writeDiskStallMetrics(w)

	ts := n.ep.Stats()
	w.Gauge("paymentlog_quic_connections", "QUIC connections open now.", int64(ts.Conns))
	w.Counter("paymentlog_quic_packets_sent_total", "QUIC packets sent, retransmissions included.", ts.PacketsSent)
	w.Counter("paymentlog_quic_packets_lost_total", "QUIC packets declared lost by this side (kernel or quic-go drops, reordering); their frames were sent again.", ts.PacketsLost)
	w.Counter("paymentlog_quic_bytes_sent_total", "QUIC bytes sent.", ts.BytesSent)
	w.Counter("paymentlog_quic_ports_closed_total", "ICMP port-unreachable errors this node's datagrams drew: a peer's process gone while its host is up (read only on Linux).", ts.PortsClosed)
	w.Counter("paymentlog_quic_poll_error_reads_total", "Socket reads Go's poller failed after an ICMP error alone woke it (Linux only); each is made past the poller, waiting up to 20 ms for a datagram.", ts.PollErrorReads)
	w.Counter("paymentlog_quic_send_drops_total", "Datagrams (single ones or GSO trains) this host dropped on their way out, for a full qdisc or device queue (ENOBUFS; read only on Linux): lost packets, sent again by QUIC's loss recovery.", ts.SendDrops)
	w.Counter("paymentlog_quic_peer_gone_closes_total", "Connections closed because a response was overdue and the peer's port was found closed since its last packet (its process is gone; Linux only): the calls on them failed at once instead of at the idle timeout.", ts.PeersGone)
	w.Counter("paymentlog_quic_dials_refused_total", "Dials that failed at once because the peer's host refused them (ICMP port unreachable: no process listens there; Linux only).", ts.DialsRefused)
	w.Counter("paymentlog_quic_requests_resent_total", "Idempotent requests sent again on a new connection because the peer had restarted (its stateless reset ended the old one).", ts.RequestsResent)

	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	w.Gauge("go_goroutines", "Goroutines now.", int64(runtime.NumGoroutine()))
	w.Gauge("go_memstats_heap_inuse_bytes", "Heap bytes in use.", int64(ms.HeapInuse))
}

// writeControllerMetrics writes the cluster gauges: the image's state on the
// active controller, 0 on every other node (so a sum or max over the nodes
// counts each partition once), and this node's commit latency as
// controller.
func (n *Node) writeControllerMetrics(w *metrics.Writer) {
	var cs struct {
		offline, underMinISR, underReplicated, reassigning, fenced, brokers, topics, partitions, groups, members int
	}
	if n.ctrl != nil {
		if s, ok := n.ctrl.Stats(); ok {
			cs.offline, cs.underMinISR, cs.underReplicated = s.OfflinePartitions, s.UnderMinISRPartitions, s.UnderReplicatedPartitions
			cs.fenced, cs.brokers, cs.topics, cs.partitions = s.FencedBrokers, s.Brokers, s.Topics, s.Partitions
			cs.reassigning, cs.groups, cs.members = s.ReassigningPartitions, s.Groups, s.GroupMembers
		}
	}
	const active = " On the active controller only (0 elsewhere)."
	w.Gauge("paymentlog_controller_offline_partitions", "Partitions without a leader (no live ISR member): reads and writes fail."+active, int64(cs.offline))
	w.Gauge("paymentlog_controller_under_min_isr_partitions", "Partitions whose ISR is below their topic's min ISR: acks=all writes are refused."+active, int64(cs.underMinISR))
	w.Gauge("paymentlog_controller_under_replicated_partitions", "Partitions whose ISR is smaller than their replica set (replicas a reassignment is adding not counted)."+active, int64(cs.underReplicated))
	w.Gauge("paymentlog_controller_reassigning_partitions", "Partitions being moved to other replicas (topic reassign)."+active, int64(cs.reassigning))
	w.Gauge("paymentlog_controller_fenced_brokers", "Registered brokers the controller has fenced (dead, or cut off)."+active, int64(cs.fenced))
	w.Gauge("paymentlog_controller_brokers", "Registered brokers."+active, int64(cs.brokers))
	w.Gauge("paymentlog_controller_topics", "Topics."+active, int64(cs.topics))
	w.Gauge("paymentlog_controller_partitions", "Partitions."+active, int64(cs.partitions))
	w.Gauge("paymentlog_controller_groups", "Consumer groups with committed offsets."+active, int64(cs.groups))
	w.Gauge("paymentlog_controller_group_members", "Members of consumer groups (consumers heartbeating under a group)."+active, int64(cs.members))
	var commits uint64
	if n.ctrl != nil {
		commits = n.ctrl.GroupCommits()
	}
	w.Counter("paymentlog_controller_group_commits_total", "Consumer group offset commits this node committed as the active controller (one metadata log record each).", commits)
	var fences [len(controller.FenceCauses)]uint64
	var probes uint64
	if n.ctrl != nil {
		fences, probes = n.ctrl.FenceCounts()
	}
	w.Family("paymentlog_controller_broker_fences_total", metrics.TypeCounter,
		"Brokers this node fenced as the active controller, by cause: session (no heartbeat for --session-timeout), port_closed (silent, and its host refused a probe of its port or this node's datagrams to it: its process is gone; --port-probe-after), deaf (its heartbeats arrive, the answers do not reach it), no_metadata (its heartbeats and their answers arrive, but for 1.5 session timeouts its raft has followed no metadata leader or another: it does not receive the metadata log).")
	for i, cause := range controller.FenceCauses {
		w.Uint(metrics.Labels{"cause", cause}, fences[i])
	}
	var closedBy [len(controller.PortFinders)]uint64
	if n.ctrl != nil {
		closedBy = n.ctrl.PortClosedCounts()
	}
	w.Family("paymentlog_controller_port_closed_fences_total", metrics.TypeCounter,
		"Of the brokers fenced as port_closed, what found the port closed: probe (this node's probe was refused), traffic (this node's own datagrams to it drew an ICMP port unreachable), raft (this node's raft found its leader, that broker, so before this node became the controller).")
	for i, by := range controller.PortFinders {
		w.Uint(metrics.Labels{"found_by", by}, closedBy[i])
	}
	w.Counter("paymentlog_controller_port_probes_total", "Probes this node sent, as the active controller, to the ports of brokers silent for --port-probe-after.", probes)
	var expired, fenced uint64
	if n.ctrl != nil {
		expired, fenced = n.ctrl.MembersRemoved()
	}
	w.Family("paymentlog_authorization_denied_total", metrics.TypeCounter,
		"Client requests this node refused by ACL (--authorizer acl), by the resource type of the refusal: topic, group, cluster.")
	for i, r := range deniedResources {
		w.Uint(metrics.Labels{"resource", r}, n.denied[i].Load())
	}
	ac := n.audit.Counts()
	w.Counter("paymentlog_audit_lines_total", "Lines this node wrote to its audit trail (--audit-log, else its log): requests that change the cluster, refusals by ACL, clients' access to topics, the node's start, stop and TLS reloads.", ac.Written)
	w.Counter("paymentlog_audit_forwarded_total", "Audit trail lines this node sent to its syslog collector (--audit-syslog).", ac.Forwarded)
	w.Counter("paymentlog_audit_forward_dropped_total", "Audit trail lines this node did not send to its syslog collector (--audit-syslog): its queue of 10000 was full, or the collector was still unreachable when the node stopped (they are in --audit-log).", ac.ForwardDropped)
	w.Family("paymentlog_audit_forward_tls_refused_total", metrics.TypeCounter,
		"TLS connections to this node's syslog collector (--audit-syslog tls://) that failed, by reason: the collector's certificate refused (unknown-ca, expired, not-yet-valid, name-mismatch, bad-certificate), the collector refusing the node (collector-refused: an alert, mostly about the node's client certificate or its lack of one), or another handshake failure (handshake-failed); retried every second.")
	for i, r := range audit.ForwardRefusals {
		w.Uint(metrics.Labels{"reason", r}, ac.ForwardTLSRefused[i])
	}
	w.Counter("paymentlog_audit_suppressed_total", "Denied lines left out of the audit trail: refusals by ACL and refused handshakes over its rate limit (100 a second; the next denied line counts them), and refused handshakes repeated within a minute (the next line for the same client host, reason and certificate counts them).", ac.Suppressed)
	w.Counter("paymentlog_audit_rotations_total", "Times this node rotated its audit file (--audit-log-max-bytes).", ac.Rotations)
	w.Counter("paymentlog_audit_rotation_errors_total", "Rotations of this node's audit file that failed (logged; the line went to the file open, and the next line tries again).", ac.RotationErrors)
	w.Counter("paymentlog_audit_write_errors_total", "Audit trail lines this node failed to write or fsync to --audit-log (logged; the request was answered).", ac.WriteErrors)
	w.Family("paymentlog_controller_group_members_removed_total", metrics.TypeCounter,
		"Consumer group members this node removed as the active controller: reason=session (no heartbeat for a session timeout), reason=rebalance (kept partitions it was told to release past its rebalance timeout).")
	w.Uint(metrics.Labels{"reason", "session"}, expired)
	w.Uint(metrics.Labels{"reason", "rebalance"}, fenced)
	w.Family("paymentlog_controller_commit_latency_seconds", metrics.TypeHistogram,
		"Time from this node's proposal of a metadata entry as controller to its local apply (quorum commit, then apply).")
	var lat metrics.HistogramSnapshot
	if n.ctrl != nil {
		lat = n.ctrl.CommitLatency()
	} else {
		lat = (&metrics.Histogram{}).Snapshot()
	}
	w.Histogram(nil, lat)
}

func (n *Node) writeBrokerMetrics(w *metrics.Writer) {
	bs := n.broker.Stats()
	w.Family("paymentlog_partitions", metrics.TypeGauge, "Partition replicas on this node by role.")
	w.Int(metrics.Labels{"role", "leader"}, int64(bs.Leaders))
	w.Int(metrics.Labels{"role", "follower"}, int64(bs.Followers))
	w.Gauge("paymentlog_under_replicated_partitions", "Partitions led here whose ISR is smaller than their replica set (replicas a reassignment is adding not counted).", int64(bs.UnderReplicated))
	w.Gauge("paymentlog_under_min_isr_partitions", "Partitions led here whose ISR is below min ISR: they refuse acks=all writes.", int64(bs.UnderMinISR))
	w.Gauge("paymentlog_failed_partition_logs", "Partition logs that failed on an I/O error (the node stops on one).", int64(bs.FailedLogs))
	w.Gauge("paymentlog_log_size_bytes", "Bytes of every partition log's segments on this node.", bs.LogSizeBytes)
	w.Gauge("paymentlog_follower_max_lag_messages", "Largest lag, in offsets, of a follower of a partition led here.", bs.MaxFollowerLag)

	w.Counter("paymentlog_produce_requests_total", "Produce requests handled.", bs.ProduceRequests)
	w.Counter("paymentlog_produce_bytes_total", "Batch bytes appended as leader (retried duplicates not counted).", bs.ProduceBytes)
	w.Counter("paymentlog_produce_reorder_waits_total", "Idempotent produce batches that reached this leader ahead of an earlier batch of their producer (their requests' streams overtook each other) and waited for it.", bs.ProduceReorderWaits)
	w.Counter("paymentlog_produce_reorder_refused_total", "Of those, batches still ahead when the wait (25 ms; 250 ms for a producer's sequence 0) was up, refused OutOfOrderSequence or UnknownProducerID: the earlier batch was lost, refused, or later still.", bs.ProduceReorderRefused)
	w.Counter("paymentlog_produce_reorder_stream_waits_total", "Produce batches without a producer sequence (idempotence off) that waited for an earlier stream of their connection, so that a producer's pipelined requests are appended in the order sent.", bs.ProduceStreamOrderWaits)
	w.Counter("paymentlog_produce_reorder_stream_skipped_total", "Of those, batches appended when the wait (250 ms) for an earlier stream whose request had not been read yet was up: that request, if it carries a batch for the partition, lands after this one.", bs.ProduceStreamOrderSkipped)
	w.Counter("paymentlog_recompressed_batches_total", "Produced batches appended as leader in their topic's compression.type rather than the codec they were sent in (retried duplicates not counted).", bs.RecompressedBatches)
	w.Family("paymentlog_recompressed_bytes_total", metrics.TypeCounter, "Bytes of those batches as producers sent them and as this node stored them.")
	w.Uint(metrics.Labels{"bytes", "sent"}, bs.RecompressedSentBytes)
	w.Uint(metrics.Labels{"bytes", "stored"}, bs.RecompressedStoredBytes)
	w.Counter("paymentlog_fetch_requests_total", "Consumer fetch requests answered (followers' fetches not counted).", bs.FetchRequests)
	w.Counter("paymentlog_fetch_bytes_total", "Record bytes sent to consumers.", bs.FetchBytes)
	w.Counter("paymentlog_replica_fetch_responses_total", "Answers sent to followers' fetches.", bs.ReplicaFetchResponses)
	w.Family("paymentlog_throttled_requests_total", metrics.TypeCounter,
		"Client requests this node held back because their principal went over its byte-rate quota (producer_byte_rate for produce, consumer_byte_rate for fetch).")
	w.Uint(metrics.Labels{"request", "produce"}, bs.ProduceThrottled)
	w.Uint(metrics.Labels{"request", "fetch"}, bs.FetchThrottled)
	w.Family("paymentlog_throttle_time_seconds_total", metrics.TypeCounter, "Time this node held client requests back for their principal's quota.")
	w.Float(metrics.Labels{"request", "produce"}, bs.ProduceThrottleTime.Seconds())
	w.Float(metrics.Labels{"request", "fetch"}, bs.FetchThrottleTime.Seconds())
	w.Counter("paymentlog_isr_shrinks_total", "Committed ISR changes of partitions led here that removed a member.", bs.ISRShrinks)
	w.Counter("paymentlog_isr_expands_total", "Committed ISR changes of partitions led here that added a member.", bs.ISRExpands)
	w.Counter("paymentlog_leader_changes_total", "Times a partition became led by this node (elections won here).", bs.LeaderChanges)
	w.Counter("paymentlog_log_flush_bytes_total", "Bytes made durable by group-commit flushes of partition logs.", bs.FlushBytes)
	w.Counter("paymentlog_log_page_cache_dropped_bytes_total", "Durable bytes of partition logs dropped from the page cache behind --page-cache-bytes.", bs.PageCacheDroppedBytes)
	w.Counter("paymentlog_retention_deleted_segments_total", "Segments deleted by retention (and by following a leader's log start).", bs.RetentionDeletedSegments)
	w.Counter("paymentlog_retention_failures_total", "Retention passes that failed (the segments stay; the disk fills).", bs.RetentionFailures)
	w.Counter("paymentlog_producer_ids_expired_total", "Idle producer ids forgotten.", bs.ProducerIDsExpired)
	w.Counter("paymentlog_log_cleaner_passes_total", "Log cleaner passes that compacted a partition's segments (topics with cleanup.policy=compact).", bs.CleanerPasses)
	w.Counter("paymentlog_log_cleaner_removed_records_total", "Records the log cleaner removed: superseded by a later record of the same key, or tombstones past delete.retention.ms.", bs.CleanerRemovedRecords)
	w.Counter("paymentlog_log_cleaner_bytes_reclaimed_total", "Segment bytes the log cleaner freed.", bs.CleanerBytesReclaimed)
	w.Counter("paymentlog_log_cleaner_segments_merged_total", "Segments the log cleaner folded into the segment before them (small neighbours cleaned into one).", bs.CleanerSegmentsMerged)
	w.Counter("paymentlog_log_scrub_bytes_total", "Bytes of sealed segments the scrubber read and checked (CRC) on this node (--log-scrub-interval, --log-scrub-bytes-per-sec).", bs.ScrubBytes)
	w.Counter("paymentlog_log_scrub_passes_total", "Scrubber passes over every partition on this node.", bs.ScrubPasses)
	w.Gauge("paymentlog_log_scrub_quarantine_bytes", "Bytes that scrub repairs set aside in this node's partition directories (scrub-quarantine-*), still there: salvage or remove them, or let --log-scrub-quarantine-retention remove them once redundant (checked at each partition's open and every --retention-check-interval).", bs.ScrubQuarantineBytes)
	w.Family("paymentlog_log_scrub_quarantine_retention_seconds", metrics.TypeGauge, "How long scrub quarantines are kept before they are removed once redundant (the cluster's log.scrub.quarantine.retention.ms, else --log-scrub-quarantine-retention); 0: never automatically.")
	w.Float(nil, bs.ScrubQuarantineRetention.Seconds())
	w.Counter("paymentlog_log_scrub_quarantine_removed_total", "Scrub quarantines removed by the node, past --log-scrub-quarantine-retention and redundant (the replica holds their offsets again, in sync with another).", bs.ScrubQuarantineRemoved)
	w.Counter("paymentlog_log_scrub_corrupt_total", "Corrupt batches the scrubber found in sealed segments on this node (each stopped the node; its next start truncates the partition there and fetches the rest again).", bs.ScrubCorrupt)
	ms := n.raft.ScrubStats()
	w.Counter("paymentlog_metadata_log_scrub_bytes_total", "Bytes of the metadata log (entries below the applied index, and snapshot files) its scrubber read and checked on this node (--log-scrub-interval, --log-scrub-bytes-per-sec).", ms.Bytes)
	w.Counter("paymentlog_metadata_log_scrub_passes_total", "Scrubber passes over the metadata log on this node.", ms.Passes)
	w.Counter("paymentlog_metadata_log_scrub_corrupt_total", "Corrupt entries and snapshot files the metadata log's scrubber found on this node (an entry stopped the node; its next start truncates the log there and catches up, vote-guarded; a snapshot file is rewritten at once).", ms.Corrupt)
	w.Counter("paymentlog_metadata_log_scrub_snapshot_repairs_total", "Corrupt metadata snapshot files the scrubber repaired (the latest written again from memory, an older one removed).", ms.SnapshotsRewritten)
	w.Gauge("paymentlog_metadata_log_scrub_quarantine_bytes", "Bytes that metadata log repairs set aside in its directory (scrub-quarantine-*), still there: salvage or remove them, or let --log-scrub-quarantine-retention remove them once redundant (the node caught up past their entries; checked at the start and every --retention-check-interval; never a single voter's).", ms.QuarantineBytes)
	w.Counter("paymentlog_metadata_log_scrub_quarantine_removed_total", "Metadata log scrub quarantines removed by the node, past --log-scrub-quarantine-retention and redundant (the node caught up, guard lifted, and applied past their entries).", ms.QuarantinesRemoved)
	w.Counter("paymentlog_log_cleaner_failures_total", "Log cleaner passes of a partition that failed (the partition is set aside and tried again after a backoff: paymentlog_log_cleaner_uncleanable_partitions).", bs.CleanerFailures)
	w.Family("paymentlog_log_cleaner_throttle_time_seconds_total", metrics.TypeCounter, "Time the log cleaner slept to keep its reads and writes within --log-cleaner-io-max-bytes-per-second.")
	w.Float(nil, bs.CleanerThrottleTime.Seconds())
	w.Gauge("paymentlog_log_cleaner_io_max_bytes_per_second", "The rate the log cleaner's reads and writes are held to (the cluster's log.cleaner.io.max.bytes.per.second, else --log-cleaner-io-max-bytes-per-second); 0: unlimited.", bs.CleanerThrottle)
	w.Family("paymentlog_log_cleaner_max_dirty_ratio", metrics.TypeGauge, "The highest dirty ratio (bytes written since the last cleaning over the cleanable bytes) of this node's compacted partitions when the last cleaner pass ranked them (Kafka's max-dirty-percent, as a ratio).")
	w.Float(nil, bs.Cleaner.MaxDirtyRatio)
	w.Family("paymentlog_log_cleaner_time_since_last_run_seconds", metrics.TypeGauge, "Time since the last log cleaner pass ended (since the node started before any; Kafka's time-since-last-run-ms).")
	w.Float(nil, bs.Cleaner.SinceLastRun.Seconds())
	w.Family("paymentlog_log_cleaner_max_clean_seconds", metrics.TypeGauge, "The longest partition's compaction in the last log cleaner pass (Kafka's max-clean-time-secs).")
	w.Float(nil, bs.Cleaner.MaxCleanTime.Seconds())
	w.Family("paymentlog_log_cleaner_max_compaction_delay_seconds", metrics.TypeGauge, "How far past its max.compaction.lag.ms the most overdue compacted partition's dirty records were when the last pass ranked them (0: none overdue; Kafka's max-compaction-delay-secs).")
	w.Float(nil, bs.Cleaner.MaxCompactionDelay.Seconds())
	w.Gauge("paymentlog_log_cleaner_uncleanable_partitions", "Compacted partitions the log cleaner set aside because their compaction failed (the node logs why at Error; each is tried again after 1 pass, then 2, 4, ... up to an hour; Kafka's uncleanable-partitions-count).", int64(bs.Cleaner.Uncleanable))
	w.Gauge("paymentlog_log_cleaner_uncleanable_bytes", "Dirty bytes of the partitions the log cleaner set aside as uncleanable, when a pass last ranked them (Kafka's uncleanable-bytes).", bs.Cleaner.UncleanableBytes)
	w.Gauge("paymentlog_log_cleaner_threads", "How many partitions the log cleaner's next pass compacts at once (the cluster's log.cleaner.threads, clamped to the dedupe buffer, else --log-cleaner-threads).", int64(n.broker.CleanerThreads()))
	w.Counter("paymentlog_reassignment_copied_bytes_total", "Bytes copied here for replicas a reassignment is adding (until each is in sync); --reassignment-throttle limits their rate.", bs.ReassignCopyBytes)
	w.Gauge("paymentlog_reassignment_throttle_bytes_per_second", "The rate those copies are held to (the cluster's reassignment.throttle.bytes, else --reassignment-throttle); 0: unlimited.", bs.ReassignThrottle)

	w.Family("paymentlog_request_errors_total", metrics.TypeCounter,
		"Partition answers carrying an error code, by request (produce, fetch: consumers, replica_fetch: followers, answered as leader) and code.")
	for _, e := range n.broker.ErrorCounts() {
		code := e.Code.String()
		if e.Other {
			code = "other"
		}
		w.Uint(metrics.Labels{"request", broker.RequestName[e.Request], "code", code}, e.Count)
	}

	lat := n.broker.Latencies()
	w.Family("paymentlog_produce_latency_seconds", metrics.TypeHistogram,
		"Produce request time on the leader, from the request's arrival to its answer, by acks (0, 1, all).")
	for i, s := range lat.Produce {
		w.Histogram(metrics.Labels{"acks", broker.AcksLevelName[i]}, s)
	}
	w.Family("paymentlog_log_flush_latency_seconds", metrics.TypeHistogram,
		"Group-commit flush time of a partition log (fsync of sealed segments and msync of the active one).")
	w.Histogram(nil, lat.Flush)

	parts := n.writePartitionMetrics(w)
	n.writeGroupLagMetrics(w, parts)
}

// writePartitionMetrics writes the per-partition gauges of the first
// MetricsMaxPartitions replicas, and returns their stats.
func (n *Node) writePartitionMetrics(w *metrics.Writer) []broker.PartitionStat {
	parts, total := n.broker.PartitionStats(MetricsMaxPartitions)
	w.Gauge("paymentlog_partition_metrics_omitted",
		"Partition replicas on this node left out of the paymentlog_partition_* series (more than "+strconv.Itoa(MetricsMaxPartitions)+").",
		int64(max(total-MetricsMaxPartitions, 0)))
	labels := make([]metrics.Labels, len(parts))
	for i, p := range parts {
		labels[i] = metrics.Labels{"topic", p.Topic, "partition", strconv.Itoa(int(p.Partition))}
	}
	gauge := func(name, help string, v func(p *broker.PartitionStat) int64) {
		w.Family(name, metrics.TypeGauge, help)
		for i := range parts {
			w.Int(labels[i], v(&parts[i]))
		}
	}
	gauge("paymentlog_partition_is_leader", "1 where this node leads the partition, 0 where it follows.",
		func(p *broker.PartitionStat) int64 { return b2i(p.Role == replica.RoleLeader) })
	gauge("paymentlog_partition_log_end_offset", "Log end offset of the local replica.",
		func(p *broker.PartitionStat) int64 { return p.LogEnd })
	gauge("paymentlog_partition_high_watermark", "High watermark of the local replica (on a follower, as last learnt from the leader).",
		func(p *broker.PartitionStat) int64 { return p.HW })
	gauge("paymentlog_partition_log_start_offset", "Log start offset of the local replica.",
		func(p *broker.PartitionStat) int64 { return p.LogStart })
	gauge("paymentlog_partition_size_bytes", "Bytes of the local replica's segments.",
		func(p *broker.PartitionStat) int64 { return p.SizeBytes })
	gauge("paymentlog_partition_isr_size", "ISR members as the local replica knows them (the leader's view is current).",
		func(p *broker.PartitionStat) int64 { return int64(p.ISR) })
	gauge("paymentlog_partition_replicas", "Replicas assigned to the partition.",
		func(p *broker.PartitionStat) int64 { return int64(p.Replicas) })

	now := time.Now()
	w.Family("paymentlog_partition_follower_lag_messages", metrics.TypeGauge,
		"On the leader: offsets each follower is behind the leader's log end (the whole log while it has not fetched since this leadership began).")
	for i, p := range parts {
		for _, f := range p.Followers {
			w.Int(append(labels[i][:4:4], "follower", strconv.Itoa(int(f.ID))), f.Messages)
		}
	}
	w.Family("paymentlog_partition_follower_lag_seconds", metrics.TypeGauge,
		"On the leader: seconds since each follower last had every record the leader had (+Inf: not since this leadership began).")
	for i, p := range parts {
		for _, f := range p.Followers {
			lag := inf
			if !f.CaughtUp.IsZero() {
				lag = max(now.Sub(f.CaughtUp).Seconds(), 0)
			}
			w.Float(append(labels[i][:4:4], "follower", strconv.Itoa(int(f.ID))), lag)
		}
	}
	return parts
}

var inf = math.Inf(1)
