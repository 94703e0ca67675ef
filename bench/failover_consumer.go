package bench

import (
	"context"
	"sync/atomic"
	"time"

	"paymentlog/client"
)

// resumeWatch follows partition 0 of the failover topic with a consumer of
// its own (its own client, as an application's would be) and records, per
// trial, when the first record produced after the kill reached it: how long
// a downstream reader waits when a leader dies, its own leader discovery
// and the producer's together.
type resumeWatch struct {
	after  atomic.Int64 // unix nanos: a record stamped later counts; 0 = not armed
	first  atomic.Int64 // unix nanos of that record's delivery; 0 = none yet
	cl     *client.Client
	cancel context.CancelFunc
	done   chan struct{}
}

// startResumeWatch starts the consumer at the end of topic's partition 0.
func (r *runner) startResumeWatch(ctx context.Context, topic string) (*resumeWatch, error) {
	cl, err := client.New(ctx, r.clientConfig())
	if err != nil {
		return nil, err
	}
	cons := cl.NewConsumer(client.ConsumerConfig{})
	cons.Assign([]client.TopicPartition{{Topic: topic, Partition: 0}}, client.SeekEnd)
	cctx, cancel := context.WithCancel(ctx)
	rw := &resumeWatch{cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(rw.done)
		defer cons.Close()
		for cctx.Err() == nil {
			msgs, err := cons.Poll(cctx)
			if err != nil && cctx.Err() == nil {
				// An error that repeats at every Poll (one a seek would
				// clear) must not spin this loop.
				r.log.Warn("failover: consumer", "err", err)
				select {
				case <-cctx.Done():
				case <-time.After(50 * time.Millisecond):
				}
				continue
			}
			now := time.Now().UnixNano()
			for _, m := range msgs {
				t, _, perr := parsePayload(m.Value)
				if a := rw.after.Load(); perr == nil && a != 0 && t.UnixNano() > a {
					rw.first.CompareAndSwap(0, now)
				}
			}
		}
	}()
	return rw, nil
}

// arm starts a trial's measurement: records stamped after at count.
func (rw *resumeWatch) arm(at time.Time) {
	rw.first.Store(0)
	rw.after.Store(at.UnixNano())
}

// wait returns when the first record stamped after the armed time arrived,
// or the zero time if ctx ends first; it disarms.
func (rw *resumeWatch) wait(ctx context.Context) time.Time {
	defer rw.after.Store(0)
	for ctx.Err() == nil {
		if f := rw.first.Load(); f != 0 {
			return time.Unix(0, f)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Millisecond):
		}
	}
	return time.Time{}
}

// close stops the consumer and its client.
func (rw *resumeWatch) close() {
	rw.cancel()
	<-rw.done
	closeClient(rw.cl)
}
