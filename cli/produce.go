package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	ucli "github.com/urfave/cli/v2"

	"paymentlog/client"
	"paymentlog/segment"
	"paymentlog/wire"
)

func init() { commands = append(commands, produceCommand) }

func produceCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "produce",
		Usage: "write one record per stdin line to a topic",
		UsageText: "paymentlog produce TOPIC [--key K | --key-delimiter :] [--null-value STR] [--partition N] [--acks all|1|0] [--compression none|lz4|zstd] [--json]\n\n" +
			"Each input line (without its line ending) is a record value. With --compression, each batch's\n" +
			"records are compressed: the nodes store and replicate them compressed, consumers decompress them.\n" +
			`With --json, one line {"partition":P,"offset":O} is printed per record, in input order, as` + "\n" +
			`records are acknowledged; a record that could not be acknowledged prints` + "\n" +
			`{"partition":-1,"offset":-1,"error":"..."} instead. On a topic with message.timestamp.type=LogAppendTime` + "\n" +
			`the line also has "log_append_time": the time (unix ms) the leader gave the record.` + "\n" +
			"Exits non-zero, saying how many, if any record was not acknowledged.",
		Flags: withFlags(clientFlags(), []ucli.Flag{
			&ucli.StringFlag{Name: "key", Usage: "key for every record", EnvVars: envVar("PRODUCE_KEY")},
			&ucli.StringFlag{Name: "key-delimiter", Usage: "split each line at the first DELIM into key and value (a line without it has no key)", EnvVars: envVar("PRODUCE_KEY_DELIMITER")},
			&ucli.StringFlag{Name: "null-value", Usage: "send a value equal to this string as null: a tombstone, which deletes its key from a compacted topic (Kafka's null.marker)", EnvVars: envVar("PRODUCE_NULL_VALUE")},
			&ucli.IntFlag{Name: "partition", Value: -1, Usage: "write every record to this partition (-1: by key hash, else sticky round-robin)", EnvVars: envVar("PRODUCE_PARTITION")},
			&ucli.StringFlag{Name: "acks", Value: "all", Usage: "all | 1 | 0", EnvVars: envVar("PRODUCE_ACKS")},
			&ucli.BoolFlag{Name: "json", Usage: `print {"partition":P,"offset":O} per record, in input order`, EnvVars: envVar("PRODUCE_JSON")},
			&ucli.StringFlag{Name: "compression", Value: "none", Usage: "compress each batch's records: none | lz4 | zstd (a batch that does not shrink is sent uncompressed; --batch-bytes and --max-record-bytes count uncompressed bytes)", EnvVars: envVar("PRODUCE_COMPRESSION")},
			&ucli.IntFlag{Name: "batch-bytes", Value: client.DefaultBatchBytes, Usage: "close a batch at this size", EnvVars: envVar("PRODUCE_BATCH_BYTES")},
			&ucli.DurationFlag{Name: "linger", Value: client.DefaultLinger, Usage: "close a batch this long after its first record", EnvVars: envVar("PRODUCE_LINGER")},
			&ucli.IntFlag{Name: "max-record-bytes", Value: client.DefaultMaxRecordBytes, Usage: "largest record, in bytes of key and value: an input line without its line ending (and without the --key-delimiter), plus --key; a larger record is not sent and counts as not acknowledged", EnvVars: envVar("PRODUCE_MAX_RECORD_BYTES")},
			&ucli.DurationFlag{Name: "delivery-timeout", Value: client.DefaultDeliveryTimeout, Usage: "give up on a record not acknowledged after this long (retries included)", EnvVars: envVar("PRODUCE_DELIVERY_TIMEOUT")},
			&ucli.DurationFlag{Name: "topic-wait", Value: client.DefaultMetadataWait, Usage: "how long to wait for a topic that does not exist (yet)", EnvVars: envVar("PRODUCE_TOPIC_WAIT")},
			&ucli.BoolFlag{Name: "no-idempotence", Usage: "no producer id or sequence numbers (retries may duplicate; one request in flight per partition, to keep the lines' order)", EnvVars: envVar("PRODUCE_NO_IDEMPOTENCE")},
		}),
		Action: func(c *ucli.Context) error {
			opts, err := parseProduceOptions(c)
			if err != nil {
				return err
			}
			return runProduce(c.Context, opts, c.App.Writer, c.App.ErrWriter)
		},
	}
}

// produceOptions are the flags of `paymentlog produce`.
type produceOptions struct {
	client    clientOptions
	topic     string
	key       []byte // with hasKey: the key of every record
	hasKey    bool
	keyDelim  []byte
	nullValue []byte // with hasNull: the value sent as null (a tombstone)
	hasNull   bool
	partition int32 // -1: partitioner
	json      bool
	producer  client.ProducerConfig
	in        io.Reader
}

func parseProduceOptions(c *ucli.Context) (produceOptions, error) {
	topic, err := oneArg(c, "topic")
	if err != nil {
		return produceOptions{}, err
	}
	co, err := parseClientOptions(c)
	if err != nil {
		return produceOptions{}, usageError("%v", err)
	}
	o := produceOptions{client: co, topic: topic, json: c.Bool("json"), partition: int32(c.Int("partition")), in: c.App.Reader}
	if c.IsSet("key") {
		o.key, o.hasKey = []byte(c.String("key")), true
	}
	if d := c.String("key-delimiter"); d != "" {
		o.keyDelim = []byte(d)
	}
	if c.IsSet("null-value") {
		o.nullValue, o.hasNull = []byte(c.String("null-value")), true
	}
	if o.hasKey && o.keyDelim != nil {
		return o, usageError("--key and --key-delimiter are mutually exclusive")
	}
	if o.partition < -1 {
		return o, usageError("--partition must be >= 0 (or -1 for the partitioner)")
	}
	acks, err := client.ParseAcks(c.String("acks"))
	if err != nil {
		return o, usageError("--acks: %v", err)
	}
	codec, err := segment.ParseCodec(c.String("compression"))
	if err != nil {
		return o, usageError("--compression: %v", err)
	}
	o.producer = client.ProducerConfig{
		Acks:               acks,
		DisableIdempotence: c.Bool("no-idempotence"),
		BatchBytes:         c.Int("batch-bytes"),
		Linger:             c.Duration("linger"),
		MaxRecordBytes:     c.Int("max-record-bytes"),
		DeliveryTimeout:    c.Duration("delivery-timeout"),
		MetadataWait:       c.Duration("topic-wait"),
		Compression:        codec,
	}
	if o.producer.Linger == 0 {
		o.producer.Linger = -1 // --linger 0: send at once
	}
	if o.producer.DisableIdempotence {
		// The leader appends a connection's requests for a partition in
		// the order sent, but without sequence numbers a retried batch
		// (after a leader change, say) lands after the ones sent behind
		// it: keep stdin's order across retries by sending one at a time.
		o.producer.MaxInFlight = 1
	}
	if err := o.producer.Validate(); err != nil {
		return o, usageError("%v", err)
	}
	if o.in == nil {
		return o, errors.New("no input")
	}
	return o, nil
}

// runProduce reads records from opts.in until EOF (or ctx ends), produces
// them, waits for every acknowledgement and reports. It returns an error
// naming how many records were not acknowledged, if any.
func runProduce(ctx context.Context, opts produceOptions, stdout, stderr io.Writer) error {
	cl, err := opts.client.newClient(ctx, stderr)
	if err != nil {
		return err
	}
	defer closeClient(cl)
	// Check the topic (and partition) before reading any input.
	n, err := waitPartitionCount(ctx, cl, opts.topic, opts.producer.MetadataWait)
	if err != nil {
		return fmt.Errorf("produce %s: %w", opts.topic, err)
	}
	if opts.partition >= int32(n) {
		return fmt.Errorf("produce %s: topic has %d partitions; no partition %d", opts.topic, n, opts.partition)
	}
	p, err := cl.NewProducer(opts.producer)
	if err != nil {
		return err
	}
	out := bufio.NewWriterSize(stdout, 1<<20)
	acks := newAckLog(out, opts.json)
	printerDone := make(chan struct{})
	go func() {
		defer close(printerDone)
		acks.printLoop()
	}()

	readErr := produceLines(ctx, opts, p, acks)

	// Wait for every acknowledgement: DeliveryTimeout bounds each record, so
	// this ends; an interrupt (ctx) gives up after a short grace.
	closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opts.producer.DeliveryTimeout+10*time.Second)
	stopOnInterrupt := context.AfterFunc(ctx, func() {
		time.AfterFunc(5*time.Second, cancel)
	})
	closeErr := p.Close(closeCtx)
	stopOnInterrupt()
	cancel()
	acks.stop()
	<-printerDone
	if err := out.Flush(); err != nil && readErr == nil {
		readErr = fmt.Errorf("write output: %w", err)
	}

	total, failed, firstErr, firstLine := acks.summary()
	switch {
	case failed > 0:
		return fmt.Errorf("%d of %d records were not acknowledged (first: input line %d: %v)", failed, total, firstLine, firstErr)
	case readErr != nil:
		return fmt.Errorf("%w (all %d records read before it were acknowledged)", readErr, total)
	case closeErr != nil:
		return closeErr
	}
	return nil
}

// produceLines feeds opts.in to the producer, one record per line.
func produceLines(ctx context.Context, opts produceOptions, p *client.Producer, acks *ackLog) error {
	in := bufio.NewReaderSize(opts.in, 1<<20)
	limit := opts.producer.MaxRecordBytes
	// A line is key and value, plus the delimiter between them if any.
	lineLimit := limit + len(opts.keyDelim)
	var scratch []byte
	rec := client.Record{Topic: opts.topic}
	if opts.partition >= 0 {
		rec.Partition, rec.PartitionSet = opts.partition, true
	}
	for {
		line, tooLong, err := readLine(in, &scratch, lineLimit)
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read input: %w", err)
		}
		if errors.Is(err, io.EOF) && line == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted: %w", ctx.Err())
		}
		idx := acks.add()
		if tooLong > 0 {
			acks.resolve(idx, client.Delivery{Partition: -1, Offset: -1, Err: tooLongError(opts, tooLong, limit)})
		} else {
			rec.Key, rec.Value = nil, line
			switch {
			case opts.hasKey:
				rec.Key = opts.key
			case opts.keyDelim != nil:
				if k, v, ok := bytes.Cut(line, opts.keyDelim); ok {
					rec.Key, rec.Value = k, v
				}
			}
			if opts.hasNull && bytes.Equal(rec.Value, opts.nullValue) {
				rec.Value = nil
			}
			if perr := p.Produce(ctx, &rec, func(d client.Delivery) { acks.resolve(idx, d) }); perr != nil {
				acks.resolve(idx, client.Delivery{Partition: -1, Offset: -1, Err: perr})
				if ctx.Err() != nil {
					return fmt.Errorf("interrupted: %w", ctx.Err())
				}
				var tooLarge *client.RecordTooLargeError
				if !errors.As(perr, &tooLarge) {
					// Not about this record (the topic went away, ...): stop reading.
					return fmt.Errorf("stopped reading input: %w", perr)
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
	}
}

// tooLongError is the error of an input line of size bytes that readLine
// found too long for a record of at most limit bytes of key and value.
func tooLongError(opts produceOptions, size, limit int) error {
	if opts.keyDelim == nil {
		return &client.RecordTooLargeError{Size: len(opts.key) + size, Max: limit}
	}
	// Its key and value are size bytes, less the delimiter if it has one:
	// more than limit either way.
	return fmt.Errorf("line of %d bytes: its key and value exceed the %d-byte record limit", size, limit)
}

// waitPartitionCount returns the topic's partition count, waiting up to wait
// for a topic that does not exist (yet).
func waitPartitionCount(ctx context.Context, cl *client.Client, topic string, wait time.Duration) (int, error) {
	if wait <= 0 {
		wait = client.DefaultMetadataWait
	}
	deadline := time.Now().Add(wait)
	for {
		n, err := cl.PartitionCount(ctx, topic)
		if err == nil || client.ErrorCode(err) != wire.UnknownTopicOrPartition || time.Now().After(deadline) {
			return n, err
		}
		select {
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// readLine returns the next line without its "\n" or "\r\n". The slice is
// valid until the next call. A line longer than limit is consumed whole and
// reported with its length in tooLong (its bytes are not returned); tooLong is
// 0 for a line within the limit. At the end of input it returns io.EOF, with
// the last line if it had no line ending, else nil.
func readLine(r *bufio.Reader, scratch *[]byte, limit int) (line []byte, tooLong int, err error) {
	line, err = r.ReadSlice('\n')
	size := len(line)
	over := false
	crlf := false // the line, read in chunks, ends in "\r\n"
	if errors.Is(err, bufio.ErrBufferFull) {
		buf := append((*scratch)[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			prev := line[len(line)-1]
			line, err = r.ReadSlice('\n')
			size += len(line)
			if n := len(line); n > 0 && line[n-1] == '\n' {
				crlf = (n >= 2 && line[n-2] == '\r') || (n == 1 && prev == '\r')
			}
			if len(buf) <= limit+2 {
				buf = append(buf, line...)
			} else {
				over = true
			}
		}
		*scratch = buf[:0]
		line = buf
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, 0, err
	}
	if len(line) == 0 && errors.Is(err, io.EOF) {
		return nil, 0, io.EOF
	}
	if over {
		// size counts every byte read, the line ending too unless input ended.
		if errors.Is(err, io.EOF) {
			return []byte{}, size, err
		}
		if crlf {
			return []byte{}, size - 2, err
		}
		return []byte{}, size - 1, err
	}
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
	}
	if len(line) > limit {
		return []byte{}, len(line), err
	}
	return line, 0, err
}

// ackLog collects delivery results and, with --json, prints them in input
// order as soon as every earlier record is resolved.
type ackLog struct {
	out  *bufio.Writer
	json bool
	wake chan struct{} // cap 1
	done chan struct{}

	mu struct {
		sync.Mutex
		slots    []ackSlot // slots[i] is record base+i (json only)
		base     int64
		total    int64
		failed   int64
		firstErr error
		firstBad int64 // index of the record firstErr is about
	}
}

type ackSlot struct {
	done bool
	part int32
	off  int64
	lat  int64 // the leader's log append time, unix ms; 0: none
	err  error
}

func newAckLog(out *bufio.Writer, json bool) *ackLog {
	return &ackLog{out: out, json: json, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// add registers the next input record and returns its index.
func (l *ackLog) add() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	idx := l.mu.total
	l.mu.total++
	if l.json {
		l.mu.slots = append(l.mu.slots, ackSlot{})
	}
	return idx
}

// resolve records one record's outcome.
func (l *ackLog) resolve(idx int64, d client.Delivery) {
	l.mu.Lock()
	if d.Err != nil {
		l.mu.failed++
		if l.mu.firstErr == nil || idx < l.mu.firstBad {
			l.mu.firstErr, l.mu.firstBad = d.Err, idx
		}
	}
	head := false
	if l.json {
		slot := ackSlot{done: true, part: d.Partition, off: d.Offset, err: d.Err}
		if !d.LogAppendTime.IsZero() {
			slot.lat = d.LogAppendTime.UnixMilli()
		}
		l.mu.slots[idx-l.mu.base] = slot
		head = idx == l.mu.base
	}
	l.mu.Unlock()
	if head {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
}

// printLoop prints resolved records in order until stop.
func (l *ackLog) printLoop() {
	if !l.json {
		<-l.done
		return
	}
	var ready []ackSlot
	var line []byte
	for {
		stopping := false
		select {
		case <-l.wake:
		case <-l.done:
			stopping = true
		}
		l.mu.Lock()
		n := 0
		for n < len(l.mu.slots) && l.mu.slots[n].done {
			n++
		}
		ready = append(ready[:0], l.mu.slots[:n]...)
		l.mu.slots = l.mu.slots[n:]
		l.mu.base += int64(n)
		l.mu.Unlock()
		for _, s := range ready {
			line = appendAck(line[:0], s)
			l.out.Write(line)
		}
		if len(ready) > 0 {
			l.out.Flush()
		}
		if stopping {
			return
		}
	}
}

func (l *ackLog) stop() { close(l.done) }

// summary returns how many records were added and failed, and the first
// failed one's error and input line (1-based).
func (l *ackLog) summary() (total, failed int64, firstErr error, firstLine int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.total, l.mu.failed, l.mu.firstErr, l.mu.firstBad + 1
}

// appendAck formats {"partition":P,"offset":O} (plus "error" on failure,
// and "log_append_time" when the topic's records take the leader's time).
func appendAck(b []byte, s ackSlot) []byte {
	if s.err != nil {
		b = append(b, `{"partition":-1,"offset":-1,"error":`...)
		b = appendJSONString(b, s.err.Error())
		return append(b, "}\n"...)
	}
	b = append(b, `{"partition":`...)
	b = strconv.AppendInt(b, int64(s.part), 10)
	b = append(b, `,"offset":`...)
	b = strconv.AppendInt(b, s.off, 10)
	if s.lat > 0 {
		b = append(b, `,"log_append_time":`...)
		b = strconv.AppendInt(b, s.lat, 10)
	}
	return append(b, "}\n"...)
}
