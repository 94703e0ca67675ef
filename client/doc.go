// Package client is paymentlog's Go client library: an Admin for topics and
// cluster status, an idempotent batching Producer, a long-polling Consumer
// and a GroupConsumer that shares topics with the other members of a group.
// The CLI (paymentlog topic/cluster/produce/consume) and the benchmark use it.
//
// # Lifecycle
//
//	c, err := client.New(ctx, client.Config{Bootstrap: []string{"127.0.0.1:7101"}})
//	defer c.Close(ctx)
//	p, err := c.NewProducer(client.ProducerConfig{})   // acks=all, idempotent
//	p.Produce(ctx, &client.Record{Topic: "payments", Value: v}, func(d client.Delivery) {...})
//	p.Close(ctx)                                        // flushes, then stops
//	cons := c.NewConsumer(client.ConsumerConfig{})
//	cons.AssignTopic(ctx, "payments", client.SeekBeginning)
//	msgs, err := cons.Poll(ctx)
//
// A Client owns one client-only QUIC endpoint shared by everything made from
// it and a metadata cache (brokers, controller, partition leaders) refreshed on
// demand: after NotLeader, UnknownTopicOrPartition, a fenced or unknown leader
// epoch, or a lost connection; and, in the background, when a producer (or
// Consumer.AssignNewPartitions) finds it older than Config.MetadataMaxAge, so
// partitions added to a topic (Admin.CreatePartitions) are used within that
// interval. Metadata requests are hedged: if the first node
// does not answer within a short delay the next one is asked as well, so a dead
// node costs a few hundred milliseconds, not a connection timeout.
//
// # Producer
//
// Records are assigned a partition (an explicit one, else the murmur2 hash of
// the key exactly as Kafka's Java client computes it — toPositive(murmur2(key))
// mod partitions, with the partition count of the cached metadata: after a
// topic gains partitions most keys move to another partition — else a sticky partition that moves round-robin after each
// BatchBytes worth of records), copied into that partition's open batch, and the
// batch is closed when it reaches BatchBytes or Linger has passed since its first
// record. One goroutine per partition sends closed batches to the partition
// leader, one Produce request per batch, with up to MaxInFlight (5) requests
// outstanding. Producer.Stats counts batches and requests and keeps two
// latency histograms: each batch's queue time before its first send and
// each request's round trip (Kafka's record-queue-time and request-latency).
// Produce copies the record's bytes before it returns; the outcome goes to
// its callback, or with ProduceTo to a DeliveryHandler, which a caller
// producing at a high rate can allocate in bulk instead of a closure per
// record (the bench does).
//
// Idempotence (on by default with acks=1 or all): the producer obtains a
// producer id (InitProducerID) and numbers records per partition. A batch is
// encoded once, when it is first sent, with its base sequence inside the CRC;
// retries resend the very same bytes, so a leader that already has the batch
// answers with its original offsets instead of writing it twice. Ordering: on
// any error the partition stops sending new batches, waits until every
// outstanding request has resolved, then resends the failed batches in
// sequence order, one at a time until the first succeeds (so that
// OutOfOrderSequence caused by requests overtaking each other, or by batches
// lost with a dead leader, resolves by resending in order), then pipelines
// again. If a batch fails for good and certainly was not written, the
// partition's later batches are re-encoded under a new identity (they
// cannot have been written either) before they are sent. After a batch that
// may have been written, later batches keep their sequences: the leader
// answers a resent one with its original offsets if it has it, and with
// OutOfOrderSequence if it does not, which restarts the sequence as above
// after three such answers.
//
// A leader with no state for the producer id (brokers forget one idle for
// --producer-id-expiration, a day by default, and a replica that restarted
// at its leader's log start never saw the batches that retention deleted)
// answers UnknownProducerID: the partition restarts its sequence at once,
// with no backoff and no error to the application, so the first record after
// a quiet period costs one extra round trip. A new identity is the producer
// id's next epoch on that partition (Kafka's local epoch bump for idempotent
// producers, KIP-360): every replica accepts sequence 0 of a newer epoch,
// and none can take it for a retry of the old epoch's first batches, as one
// that still remembers them would take sequence 0 under the old epoch. Only
// a producer id at epoch 32767 asks for a fresh id (InitProducerID).
//
// A batch its leader refuses as larger than the topic takes
// (RecordTooLarge: max.message.bytes lowered while it was queued or in
// flight, or a compression.type that stores it larger than it was sent) is
// split and resent, as Kafka's producer does, rather than failed: after the
// partition's recovery and a metadata refresh, its pieces (packed to the
// limit the metadata then shows, else halves, again if refused again)
// take its place at the head of the queue and its sequence range, so the
// later batches keep theirs and none of them is written before the pieces
// (with idempotence; without, a later batch already in flight may be, as
// with any retry when MaxInFlight is above 1). Pieces are encoded in
// Compression. A record refused alone fails with a RecordTooLargeError
// naming the topic. Producer.Stats counts the splits.
//
// Delivery timeout: every batch queued (not in flight) past its
// DeliveryTimeout fails with ErrDeliveryTimeout at once, the whole backlog in
// one pass, like any batch failing for good. A batch in flight is never
// expired while its request is outstanding, since it may be written: its
// answer (or the request's own timeout) decides, and a retry is not sent
// after the deadline.
//
// While requests are outstanding the partition checks the metadata every
// LeaderCheckInterval, and once one has been out that long the client keeps
// one long-poll Metadata request (a watch) at a node other than that
// leader, answered the moment the node applies newer metadata; when the
// partition's leader or leader epoch has moved on, requests to the old leader are abandoned and resent to the new one at
// once (no retry backoff, no further metadata round trip: the metadata in
// hand names it), so a killed leader does not hold writes up until a
// transport timeout.
//
// # Consumer
//
// A Consumer is assigned partitions, each with a position (SeekBeginning,
// SeekEnd or an offset; OffsetsForTimes finds the offset of the first record
// stamped at or after a time, for a replay from it). Poll keeps one long-poll Fetch outstanding per
// leader and returns as soon as any of them answers; fetches continue in the
// background between polls. Records below the position inside the first
// batch are skipped. Leader changes are followed: after NotLeader or a failed
// fetch the metadata is refreshed, and a fetch outstanding at a leader that the
// metadata says has been replaced (or one overstaying MaxWait, as a dead
// leader's does) is abandoned and sent to the new leader.
//
// While fetches are in flight the consumer keeps one metadata watch (a
// long-poll Metadata request) at a node that serves none of them where it
// can: a leader that dies is replaced when the controller fences it, and
// the watch brings that news the moment a node applies it, so the fetch
// stuck at the dead leader is abandoned then rather than once it is
// overdue (MaxWait + 50 ms, when the metadata is polled as well).
//
// Log divergence (KIP-320): every fetch carries the leader epoch of the last
// record Poll returned for the partition. A leader whose log no longer has
// the history the consumer read (truncated below the position and maybe
// written again, after an unclean leader election or records lost under
// --fsync never) answers with where the histories part instead of records,
// and Poll returns a *LogTruncatedError (errors.Is ErrLogTruncated) naming
// the partition, its position and that offset, again at every Poll until the
// application seeks: the consumer never reads another history as if it
// followed the one it returned, and never resets on its own.
//
// # Consumer groups
//
// Committed offsets (Kafka's) are kept by the active controller in the
// metadata log: Admin.CommitOffsets, FetchOffsets, DescribeGroup,
// ListGroups and DeleteGroup. A consumer resumes with SeekCommitted (each
// partition at the group's committed offset, a fallback where it has none;
// the committed leader epoch checks the log was not truncated below it
// meanwhile) and stores its progress with CommitPositions, or CommitOffsets
// for what it processed, committing only the partitions that moved.
//
// GroupConsumers are members of a group (Kafka's KIP-848, the assignment
// computed by the active controller): the members share the partitions of
// the topics they subscribe to, a partition handed from one to the next
// only after the first committed and released it. A goroutine of each
// heartbeats to the controller; Poll applies the assignment (release,
// start at the committed offset) before it reads; an application that
// does not call Poll for MaxPollInterval loses its membership, and its
// partitions go to the others. While a group has
// members, only they commit its offsets; a Consumer using the group name
// without membership reads what it is assigned, and its commits are
// refused meanwhile (wire.NonEmptyGroup).
package client
