package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"paymentlog/client"
)

// consume --group without --partition: the command joins the group as a
// member (client.GroupConsumer) and prints the partitions the group gives
// it, sharing the topic with the group's other members.

// runConsumeMember is runConsume as a member of opts.group.
func runConsumeMember(ctx context.Context, cl *client.Client, opts consumeOptions, ccfg client.ConsumerConfig, stdout, stderr io.Writer) (err error) {
	gc := newGroupCommitter(opts)
	src := &memberSource{opts: opts, ctx: ctx, gc: gc, ends: map[int32]int64{}}
	cfg := client.GroupConsumerConfig{Group: opts.group, Topics: []string{opts.topic}, InstanceID: opts.instance, From: opts.from, FromTime: opts.fromTime,
		Consumer: ccfg, CommitAt: gc.commitAt, OnAssigned: src.assigned, OnRevoked: src.revoked,
		OnCommitError: func(tps []client.TopicPartition, err error) {
			fmt.Fprintf(stderr, "paymentlog: consume %s: commit of %s, handed to another member, failed (it prints again from the last commit): %v\n",
				opts.topic, partitionList(tps), err)
		}}
	setupCtx, cancel := context.WithTimeout(ctx, defaultAdminTimeout)
	defer cancel()
	if _, err := cl.PartitionCount(setupCtx, opts.topic); err != nil {
		return fmt.Errorf("consume %s: %w", opts.topic, err)
	}
	member, err := cl.NewGroupConsumer(setupCtx, cfg)
	if err != nil {
		return fmt.Errorf("consume %s: %w", opts.topic, err)
	}
	gc.member, src.member = member, member
	out := bufio.NewWriterSize(stdout, 1<<20)
	defer out.Flush()
	defer func() {
		// Flush and commit what reached the output, then leave the group
		// (its other members get the partitions at once).
		err = gc.commitAtExit(ctx, out, err, stderr)
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), groupCommitTimeout)
		defer cancel()
		if cerr := member.Close(cctx); cerr != nil {
			fmt.Fprintf(stderr, "paymentlog: consume %s: %v\n", opts.topic, cerr)
		}
	}()
	return printRecords(ctx, opts, member.Consumer(), src, gc, out, stderr)
}

// memberSource reads the partitions the group gives the member. With
// --exit-at-end each partition's goal is its high watermark when the
// member started it.
type memberSource struct {
	opts   consumeOptions
	ctx    context.Context // the command's, for the goals' requests
	member *client.GroupConsumer
	gc     *groupCommitter
	// ends are, by partition, the --exit-at-end goals of the partitions
	// read.
	ends map[int32]int64
	// err is a goal that could not be set, for poll to return.
	err error
}

func (s *memberSource) poll(ctx context.Context) ([]client.Message, error) {
	if s.err != nil {
		return nil, s.err
	}
	return s.member.Poll(ctx)
}

// pastGoal: a record of a partition whose goal could not be set counts as
// past it (not printed, not committed); poll fails next.
func (s *memberSource) pastGoal(m *client.Message) bool {
	if !s.opts.exitAtEnd {
		return false
	}
	end, ok := s.ends[m.Partition]
	return !ok || m.Offset >= end
}

// atEnd: the member reads at least one partition, the group gives it
// nothing else (its last heartbeat answer assigned exactly what it
// reads), and every one is read up to its goal.
func (s *memberSource) atEnd() bool {
	if !s.opts.exitAtEnd || !s.member.Stable() {
		return false
	}
	tps := s.member.Assignment()
	for _, tp := range tps {
		pos, ok := s.member.Consumer().Position(tp)
		end, known := s.ends[tp.Partition]
		if !ok || !known || pos < 0 || pos < end {
			return false
		}
	}
	return len(tps) > 0
}

// assigned sets the --exit-at-end goals of partitions the member started
// (client.GroupConsumerConfig.OnAssigned).
func (s *memberSource) assigned(tps []client.TopicPartition) {
	if !s.opts.exitAtEnd || s.err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, defaultAdminTimeout)
	defer cancel()
	cons := s.member.Consumer()
	ends, err := cons.EndOffsets(ctx, tps)
	if err != nil {
		s.err = fmt.Errorf("consume %s: end offsets: %w", s.opts.topic, err)
		return
	}
	for _, tp := range tps {
		s.ends[tp.Partition] = ends[tp]
		if err := checkNotPastEnd(s.opts.topic, cons, tp, ends[tp]); err != nil {
			s.err = err
			return
		}
	}
}

// revoked forgets what consume kept of partitions given to another member
// (client.GroupConsumerConfig.OnRevoked): they were committed already.
func (s *memberSource) revoked(tps []client.TopicPartition) {
	for _, tp := range tps {
		delete(s.ends, tp.Partition)
		s.gc.rewound(tp.Partition)
	}
}

// partitionList names tps of the one topic a consume reads: "partitions 0, 2".
func partitionList(tps []client.TopicPartition) string {
	ps := make([]string, len(tps))
	for i, tp := range tps {
		ps[i] = strconv.Itoa(int(tp.Partition))
	}
	if len(ps) == 1 {
		return "partition " + ps[0]
	}
	return "partitions " + strings.Join(ps, ", ")
}
