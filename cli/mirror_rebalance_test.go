package cli

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"paymentlog/client"
)

// runningMirror is a runMirror in its own goroutine.
type runningMirror struct {
	errb   lockedBuffer
	cancel context.CancelFunc
	done   chan error
}

func startMirror(t *testing.T, opts mirrorOptions) *runningMirror {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &runningMirror{cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- runMirror(ctx, opts, &r.errb) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop interrupts the run and returns its error.
func (r *runningMirror) stop(t *testing.T) error {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		r.done <- err
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("mirror still running 30 s after its interrupt; stderr %q", r.errb.String())
		return nil
	}
}

// membersOwning reports whether group has n members that each own
// (and are assigned) parts/n partitions.
func membersOwning(c *client.Client, group string, n, parts int) func() bool {
	return func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		d, err := c.Admin().DescribeGroup(ctx, group)
		if err != nil || len(d.Members) != n {
			return false
		}
		for _, m := range d.Members {
			owned := 0
			for _, gp := range m.Owned {
				owned += len(gp.Partitions)
			}
			if owned != parts/n || len(m.Assigned) != len(m.Owned) {
				return false
			}
		}
		return true
	}
}

// Two mirror processes of one group share the partitions while records
// keep coming: the first hands two partitions to the second after the
// target acknowledged their records in flight and it committed them, so
// the target holds every source record exactly once, in order, across
// the hand-over and both processes' exits.
func TestMirrorHandsPartitionsOverWithoutRepeats(t *testing.T) {
	e := startMirrorEnv(t)
	const parts = 4
	createTopicN(t, e, "t", parts)
	opts := e.options("t")
	opts.commitInterval = 0 // commits only at hand-over and exit
	prod, err := e.srcC.NewProducer(client.ProducerConfig{Linger: -1})
	if err != nil {
		t.Fatal(err)
	}
	var failed atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	written := make([]int, parts)
	wg.Add(1)
	go func() { // a steady trickle on every partition until stop
		defer wg.Done()
		for i := 0; ; i++ {
			for p := range int32(parts) {
				rec := &client.Record{Topic: "t", Partition: p, PartitionSet: true, Value: []byte(strconv.Itoa(i))}
				if err := prod.Produce(context.Background(), rec, func(d client.Delivery) {
					if d.Err != nil {
						failed.Add(1)
					}
				}); err != nil {
					failed.Add(1)
				}
				written[p] = i + 1
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	a := startMirror(t, opts)
	waitForCLI(t, "the first mirror with the 4 partitions", membersOwning(e.srcC, defaultMirrorGroup, 1, parts))
	b := startMirror(t, opts)
	waitForCLI(t, "two mirrors with 2 partitions each", membersOwning(e.srcC, defaultMirrorGroup, 2, parts))
	close(stop) // the trickle went on across the hand-over
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := prod.Close(ctx); err != nil || failed.Load() > 0 {
		t.Fatalf("produce to the source: %v, %d failed", err, failed.Load())
	}
	for p := range int32(parts) {
		want := int64(written[p])
		waitForCLI(t, "every record mirrored", func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			d, err := e.dstC.Admin().DescribeTopic(ctx, "t")
			return err == nil && d.Partitions[p].HighWatermark >= want
		})
	}
	if err := a.stop(t); err != nil {
		t.Fatalf("first mirror: %v; stderr %q", err, a.errb.String())
	}
	if err := b.stop(t); err != nil {
		t.Fatalf("second mirror: %v; stderr %q", err, b.errb.String())
	}
	dst := readPartitions(t, e.dstC, "t")
	committed := groupOffsets(t, e.srcC, defaultMirrorGroup, "t")
	for p := range int32(parts) {
		if got := sourceOffsets(t, "t", p, dst[p]); !slices.Equal(got, offsetRange(0, int64(written[p]))) || committed[p] != int64(written[p]) {
			t.Fatalf("partition %d: the target holds source offsets %v, committed %d; want 0-%d once each, all committed",
				p, compactRanges(got), committed[p], written[p]-1)
		}
	}
}
