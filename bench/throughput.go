package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"paymentlog/client"
	"paymentlog/segment"
	"paymentlog/wire"
)

// ThroughputResult is the throughput benchmark's output. JSON names are part
// of the --json format.
type ThroughputResult struct {
	Topic         string  `json:"topic"`
	RecordSize    int     `json:"record_size"`
	Records       int64   `json:"records"` // acknowledged
	Failed        int64   `json:"failed"`
	Seconds       float64 `json:"seconds"`
	RecordsPerSec float64 `json:"records_per_sec"`
	MBPerSec      float64 `json:"mb_per_sec"` // acknowledged payload (record values), 10^6 bytes/s
	// ReplicatedMBPerSec is MBPerSec times the replication factor: what the
	// cluster stores and moves (before compression).
	ReplicatedMBPerSec float64 `json:"replicated_mb_per_sec"`
	// Compression and Payload are the producers' codec and what the
	// record values held (--compression, --payload).
	Compression string `json:"compression"`
	Payload     string `json:"payload"`
	// StoredBytes is what the leaders appended during the full-load run
	// (the nodes' paymentlog_produce_bytes_total): the batches as the
	// producers sent them, compressed or not, headers included.
	// StoredPerPayloadByte is StoredBytes ÷ the payload bytes acknowledged:
	// about 1.01 uncompressed at 1 KiB records (the batch and record
	// framing), below 1 what compression saves on disk and on the wire.
	// Zero when the nodes' counters were not read (--bootstrap,
	// --metrics=false).
	StoredBytes          uint64  `json:"leader_stored_bytes,omitempty"`
	StoredPerPayloadByte float64 `json:"stored_bytes_per_payload_byte,omitempty"`
	// NodeCPUMsPerMB and BenchCPUMsPerMB are the CPU milliseconds the local
	// nodes and this process (the producers: compression is theirs) spent
	// per payload MB of the full-load run; zero when the CPU was not
	// measured.
	NodeCPUMsPerMB  float64 `json:"node_cpu_ms_per_payload_mb,omitempty"`
	BenchCPUMsPerMB float64 `json:"bench_cpu_ms_per_payload_mb,omitempty"`
	// TransportCPUMsPerMB is what the raw QUIC stream of the same invocation
	// spent to move one payload MB once per replica (its CPU per MB times
	// the replication factor): the transport's share of the two figures
	// above, had the cluster's transfers cost what the raw stream's did.
	TransportCPUMsPerMB float64 `json:"transport_cpu_ms_per_payload_mb,omitempty"`
	// TransportRatio is MBPerSec ÷ (raw QUIC MB/s ÷ replication factor), when
	// the transport baseline ran in the same invocation.
	TransportRatio float64 `json:"transport_ceiling_ratio,omitempty"`
	// DiskRatio is ReplicatedMBPerSec ÷ raw disk MB/s: every replica of the
	// local cluster writes to the same disk, so the replicated bytes are
	// what the disk takes (with --bootstrap it only says how this machine's
	// disk compares).
	DiskRatio      float64     `json:"disk_ceiling_ratio,omitempty"`
	ProduceLatency Percentiles `json:"produce_latency_ms"` // at full load: mostly queueing
	HalfLoad       *HalfLoad   `json:"half_load,omitempty"`
	Consume        *Consume    `json:"consume,omitempty"`
	Changes        Changes     `json:"cluster_changes"`     // must be all zero without faults
	CPU            *CPUUsage   `json:"cpu,omitempty"`       // during the full-load run (local cluster)
	QUICLoss       *QUICLoss   `json:"quic_loss,omitempty"` // during the full-load run (local cluster)
	Messages       *Messages   `json:"messages,omitempty"`  // during the full-load run (local cluster)
	FirstError     string      `json:"first_error,omitempty"`
	// ChangeReasons is why the cluster changed, from the local nodes' logs
	// (changereasons.go), and ChangeReasonsMore how many more reasons
	// they gave.
	ChangeReasons     []string `json:"cluster_change_reasons,omitempty"`
	ChangeReasonsMore int      `json:"cluster_change_reasons_more,omitempty"`
	// Rounds is each round's figures with --rounds N > 1; the figures above
	// are then their medians (combineRounds says which are medians).
	Rounds []ThroughputRound `json:"rounds,omitempty"`
}

// HalfLoad is a paced run at half the measured rate: the latency figures.
type HalfLoad struct {
	TargetRate     float64     `json:"target_records_per_sec"`
	RecordsPerSec  float64     `json:"records_per_sec"`
	Records        int64       `json:"records"`
	Failed         int64       `json:"failed"`
	ProduceLatency Percentiles `json:"produce_latency_ms"` // from the intended send time
	EndToEnd       Percentiles `json:"e2e_latency_ms"`     // produce call to a consumer's Poll returning it
	// E2EPartition is the one partition the end-to-end consumer follows
	// (a sample: reading every partition would add a fourth transfer of
	// every byte on the same two cores and skew the produce latency).
	E2EPartition int32 `json:"e2e_partition"`
	Consumed     int64 `json:"consumed"`
	// CPU is what the local cluster and the bench used during the paced run.
	CPU      *CPUUsage `json:"cpu,omitempty"`
	QUICLoss *QUICLoss `json:"quic_loss,omitempty"`
	Messages *Messages `json:"messages,omitempty"`
	// CPUSlowdowns is what the CPU speed probe saw during the run (nil with
	// --cpu-probe=false).
	CPUSlowdowns *CPUSlowdowns `json:"cpu_slowdowns,omitempty"`
	// ClearLatency is the produce latency of the records whose whole
	// latency lies outside every slowdown window: what the system does while
	// the CPU runs at its usual speed. Its count says how many records that
	// is. The target is judged on ProduceLatency, not on this.
	ClearLatency *Percentiles `json:"produce_latency_clear_ms,omitempty"`
	// ClearOf is how many acknowledged records ClearLatency was drawn from:
	// all of them, or the first probeTraceLimit of a long run.
	ClearOf int64 `json:"produce_latency_clear_of,omitempty"`
	// Stages splits the produce latency by where the time went.
	Stages *LatencyStages `json:"latency_stages,omitempty"`
}

// Consume is one consumer reading the full-load run back from the beginning.
type Consume struct {
	Records       int64   `json:"records"`
	Seconds       float64 `json:"seconds"`
	RecordsPerSec float64 `json:"records_per_sec"`
	MBPerSec      float64 `json:"mb_per_sec"`
}

// producerConfig turns the flags into a client.ProducerConfig.
func (t ThroughputConfig) producerConfig() client.ProducerConfig {
	acks, _ := client.ParseAcks(t.Acks)
	linger := t.Linger
	if linger == 0 {
		linger = -1 // --linger 0: send at once, as `paymentlog produce --linger 0` (the client reads 0 as its default)
	}
	codec, _ := segment.ParseCodec(t.Compression)
	return client.ProducerConfig{
		Acks:               acks,
		DisableIdempotence: !t.Idempotence,
		BatchBytes:         t.BatchBytes,
		Linger:             linger,
		MaxInFlight:        t.MaxInFlight,
		BufferBytes:        t.BufferBytes,
		Compression:        codec,
	}
}

// runThroughput creates a topic, produces at full speed, reads it back, then
// produces at half the rate with a live consumer for latency.
func (r *runner) runThroughput(ctx context.Context) (*ThroughputResult, error) {
	tc := r.cfg.Throughput
	topic := fmt.Sprintf("bench-throughput-%d", time.Now().UnixNano())
	codec, _ := segment.ParseCodec(tc.Compression)
	kind, _ := parsePayloadKind(tc.Payload)
	res := &ThroughputResult{Topic: topic, RecordSize: tc.RecordSize, Compression: codec.String(), Payload: kind}
	// Made before any load: the measured runs only copy them.
	bodies, err := newBodies(kind, tc.RecordSize-payloadHeader)
	if err != nil {
		return nil, err
	}
	if err := r.createTopic(ctx, topic, tc.Partitions, tc.ReplicationFactor, tc.MinISR); err != nil {
		return nil, err
	}
	w := newWatcher(ctx, r.ep, r.target.bootstrap(), []string{topic}, 50*time.Millisecond)
	defer w.close()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	_, err = w.waitState(wctx, func(md *wire.MetadataResponse) bool { return inSync(md, topic) })
	cancel()
	if err != nil {
		return nil, fmt.Errorf("bench: topic %s never got a full ISR: %w", topic, err)
	}
	ps, err := newProducerSet(ctx, r.clientConfig(), tc.producerConfig(), tc.Producers)
	if err != nil {
		return nil, err
	}
	defer ps.close()

	// Full load.
	marks := r.logMarks()
	phase, err := r.startPhase(ctx, r.roundPrefix(), tc.Duration)
	if err != nil {
		return nil, err
	}
	bar := r.progress.phase(r.roundLabel("throughput"), tc.Duration, tc.Records)
	req0 := readProducerRequests(ps.producers)
	full := runLoad(ctx, ps.producers, loadConfig{
		topic: topic, partitions: tc.Partitions, recordSize: tc.RecordSize, bodies: bodies,
		duration: tc.Duration, records: tc.Records,
		progress: bar.records,
	})
	bar.done()
	req1 := readProducerRequests(ps.producers)
	res.CPU, res.QUICLoss, res.Messages = r.stopPhase(ctx, phase)
	res.Records, res.Failed = full.acked, full.failed
	res.Messages.addRecords(full.acked)
	res.Messages.addRequests(req0, req1)
	res.Seconds = full.elapsed().Seconds()
	res.RecordsPerSec = perSec(full.acked, full.elapsed())
	res.MBPerSec = mbps(full.ackedBytes, full.elapsed())
	res.ReplicatedMBPerSec = res.MBPerSec * float64(tc.ReplicationFactor)
	res.addStored(phase, full.ackedBytes)
	res.ProduceLatency = full.lat.percentiles()
	if full.firstErr != nil {
		res.FirstError = full.firstErr.Error()
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}

	if tc.ConsumeCheck && full.acked > 0 {
		c, err := r.consumeAll(ctx, topic, full.acked)
		if err != nil {
			return res, err
		}
		res.Consume = c
	}

	if tc.HalfLoadDuration > 0 && res.RecordsPerSec > 0 {
		rate := res.RecordsPerSec / 2
		if tc.LatencyRate > 0 {
			rate = tc.LatencyRate
		}
		h, err := r.halfLoad(ctx, ps, topic, rate, bodies)
		if err != nil {
			return res, err
		}
		res.HalfLoad = h
	}
	res.Changes = w.changes(full.start, time.Now())
	if c := res.Changes; c.ISRShrinks+c.Fencings+c.Unseen > 0 {
		res.ChangeReasons, res.ChangeReasonsMore = r.changeReasonsSince(marks)
	}
	return res, nil
}

// addStored fills the figures of what the full-load phase stored and what
// its CPU cost per payload MB, from the phase's readings of the nodes'
// counters and CPU (left zero where those were not read).
func (t *ThroughputResult) addStored(phase *phaseMeter, payloadBytes int64) {
	if payloadBytes <= 0 {
		return
	}
	if stored, ok := phase.end.produceBytesSince(phase.counters); ok {
		t.StoredBytes, t.StoredPerPayloadByte = stored, float64(stored)/float64(payloadBytes)
	}
	if u := t.CPU; u != nil {
		mb := float64(payloadBytes) / 1e6
		t.NodeCPUMsPerMB, t.BenchCPUMsPerMB = 1000*u.NodesSeconds/mb, 1000*u.BenchSeconds/mb
	}
}

// consumeAll reads topic from the beginning until want records arrived.
func (r *runner) consumeAll(ctx context.Context, topic string, want int64) (*Consume, error) {
	cl, err := client.New(ctx, r.clientConfig())
	if err != nil {
		return nil, err
	}
	defer closeClient(cl)
	cons := cl.NewConsumer(client.ConsumerConfig{MaxBytes: 32 << 20, PartitionMaxBytes: 4 << 20})
	defer cons.Close()
	if _, err := cons.AssignTopic(ctx, topic, client.SeekBeginning); err != nil {
		return nil, err
	}
	bar := r.progress.phase("consume", 0, want)
	defer bar.done()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var got, bytes int64
	start := time.Now()
	for got < want {
		msgs, err := cons.Poll(ctx)
		if err != nil {
			return nil, fmt.Errorf("bench: consume %s: %w (after %d of %d records)", topic, err, got, want)
		}
		for _, m := range msgs {
			bytes += int64(len(m.Value))
		}
		got += int64(len(msgs))
		bar.records(got)
	}
	d := time.Since(start)
	return &Consume{Records: got, Seconds: d.Seconds(), RecordsPerSec: perSec(got, d), MBPerSec: mbps(bytes, d)}, nil
}

// halfLoad produces at rate with a consumer following the topic's end.
func (r *runner) halfLoad(ctx context.Context, ps *producerSet, topic string, rate float64, bodies bodies) (*HalfLoad, error) {
	tc := r.cfg.Throughput
	cl, err := client.New(ctx, r.clientConfig())
	if err != nil {
		return nil, err
	}
	defer closeClient(cl)
	cons := cl.NewConsumer(client.ConsumerConfig{MaxWait: 100 * time.Millisecond})
	defer cons.Close()
	// End-to-end latency is sampled on one partition; see HalfLoad.E2EPartition.
	const sample = int32(0)
	tps := []client.TopicPartition{{Topic: topic, Partition: sample}}
	cons.Assign(tps, client.SeekEnd)
	ends, err := cons.EndOffsets(ctx, tps)
	if err != nil {
		return nil, err
	}
	for _, tp := range tps {
		if err := cons.Seek(tp, ends[tp]); err != nil {
			return nil, err
		}
	}
	e2e := newLatency()
	var consumed int64
	produced := make(chan int64, 1)
	consErr := make(chan error, 1)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		want := int64(-1)
		for want < 0 || consumed < want {
			select {
			case want = <-produced:
				continue
			default:
			}
			msgs, err := cons.Poll(cctx)
			if err != nil {
				consErr <- err
				return
			}
			now := time.Now()
			for _, m := range msgs {
				if t, _, err := parsePayload(m.Value); err == nil {
					e2e.record(now.Sub(t))
				}
			}
			consumed += int64(len(msgs))
		}
		consErr <- nil
	}()
	phase, err := r.startPhase(ctx, r.roundPrefix()+"latency.", tc.HalfLoadDuration)
	if err != nil {
		return nil, err
	}
	bar := r.progress.phase(r.roundLabel("latency"), tc.HalfLoadDuration, 0)
	var onSample atomic.Int64 // acknowledged records on the sampled partition
	var trace *latencyTrace
	switch {
	case r.cfg.LatencyTracePath != "":
		trace = newLatencyTrace(rate, tc.HalfLoadDuration, 0)
	case tc.CPUProbe:
		trace = newLatencyTrace(rate, tc.HalfLoadDuration, probeTraceLimit)
	}
	var probe *speedProbe
	if tc.CPUProbe {
		probe = startSpeedProbe(tc.HalfLoadDuration)
	}
	stages0, req0 := readProducerStages(ps.producers), readProducerRequests(ps.producers)
	lr := runLoad(ctx, ps.producers, loadConfig{
		topic: topic, partitions: tc.Partitions, recordSize: tc.RecordSize, bodies: bodies,
		rate: rate, duration: tc.HalfLoadDuration, progress: bar.records, trace: trace,
		onAck: func(d client.Delivery, _ recordID, _ time.Time) {
			if d.Partition == sample {
				onSample.Add(1)
			}
		},
	})
	bar.done()
	stages1, req1 := readProducerStages(ps.producers), readProducerRequests(ps.producers)
	slow := probe.stop()
	cpu, loss, msgs := r.stopPhase(ctx, phase)
	stages := latencyStages(stages0, stages1, phase.counters, phase.end)
	msgs.addRecords(lr.acked)
	msgs.addRequests(req0, req1)
	produced <- onSample.Load()
	select {
	case err := <-consErr:
		if err != nil {
			return nil, fmt.Errorf("bench: end-to-end consumer: %w", err)
		}
	case <-time.After(30 * time.Second):
		cancel()
		<-consErr
	}
	if r.cfg.LatencyTracePath != "" {
		if err := trace.writeFile(r.roundPath(r.cfg.LatencyTracePath)); err != nil {
			return nil, err
		}
	}
	var (
		clearLat *Percentiles
		looked   int64
	)
	if slow != nil {
		c, n := trace.clearOf(slow.excluded())
		clearLat, looked = &c, n
	}
	return &HalfLoad{
		TargetRate: rate, RecordsPerSec: perSec(lr.acked, lr.elapsed()), Records: lr.acked, Failed: lr.failed,
		ProduceLatency: lr.lat.percentiles(), EndToEnd: e2e.percentiles(), E2EPartition: sample, Consumed: consumed, CPU: cpu,
		QUICLoss: loss, Messages: msgs, CPUSlowdowns: slow, ClearLatency: clearLat, ClearOf: looked, Stages: stages,
	}, nil
}

func closeClient(c *client.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c.Close(ctx)
}
