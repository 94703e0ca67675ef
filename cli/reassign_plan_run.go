package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"

	"paymentlog/client"
)

// readPlan reads and parses a plan file.
func readPlan(path string) (plan, error) {
	f, err := os.Open(path)
	if err != nil {
		return plan{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxPlanBytes+1))
	if err != nil {
		return plan{}, err
	}
	p, err := parsePlan(data)
	if err != nil {
		return plan{}, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// describeAll describes the named topics.
func describeAll(ctx context.Context, a *client.Admin, names []string) (map[string]client.TopicDescription, []client.TopicDescription, error) {
	byName := map[string]client.TopicDescription{}
	var list []client.TopicDescription
	for _, n := range names {
		d, err := a.DescribeTopic(ctx, n)
		if err != nil {
			return nil, nil, fmt.Errorf("describe %s: %w", n, err)
		}
		byName[n] = d
		list = append(list, d)
	}
	return byName, list, nil
}

// runGeneratePlan is --generate: it prints a proposed assignment of the
// topics over the given brokers to stdout, as a plan (so that `> plan.json`
// makes a plan file), and their current one to stderr.
func runGeneratePlan(ctx context.Context, a *client.Admin, opts topicReassignOptions, stdout, stderr io.Writer) error {
	_, list, err := describeAll(ctx, a, opts.topics)
	if err != nil {
		return err
	}
	var all []planPartition
	for _, t := range list {
		for _, pi := range t.Partitions {
			all = append(all, planPartition{Topic: t.Name, Partition: pi.Partition, Replicas: target(pi)})
		}
	}
	st, err := a.DescribeCluster(ctx)
	if err != nil {
		return err
	}
	racks := map[int32]string{}
	for _, n := range st.Nodes {
		racks[n.ID] = n.Rack
	}
	proposed, err := generatePlan(list, opts.brokers, func(id int32) string { return racks[id] })
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "Current partition replica assignment\n%s", marshalPlan(plan{Version: 1, Partitions: all}))
	_, err = io.WriteString(stdout, marshalPlan(proposed))
	return err
}

// runExecutePlan is --plan FILE: it prints the current assignment of the
// plan's partitions (the plan to roll back with; also written to
// --rollback-file), changes the replication factors the plan changes (to
// the plan's replicas at once), starts every partition's reassignment and,
// unless --no-wait, waits for them all.
func runExecutePlan(ctx context.Context, a *client.Admin, opts topicReassignOptions, p plan, stdout io.Writer) error {
	topics, _, err := describeAll(ctx, a, planTopics(p))
	if err != nil {
		return err
	}
	rfs, err := checkPlan(p, topics)
	if err != nil {
		return err
	}
	rollback := marshalPlan(currentPlan(p, topics))
	if opts.rollbackFile != "" {
		if err := writeNewFile(opts.rollbackFile, rollback); err != nil {
			return fmt.Errorf("rollback file: %w", err)
		}
	}
	fmt.Fprintf(stdout, "Current partition replica assignment (save it to roll back with --plan)\n%s\n", rollback)
	for _, name := range planTopics(p) {
		if rf, ok := rfs[name]; ok {
			// One change gives every partition the plan's replicas (the
			// plan lists them all): none is picked, copied to, then moved.
			assignment := make([][]int32, len(topics[name].Partitions))
			for _, pp := range p.Partitions {
				if pp.Topic == name && pp.Partition >= 0 && int(pp.Partition) < len(assignment) {
					assignment[pp.Partition] = pp.Replicas
				}
			}
			if err := a.AlterReplicationFactorAssigned(ctx, name, assignment); err != nil {
				return fmt.Errorf("change the replication factor of %s to %d: %w", name, rf, err)
			}
			fmt.Fprintf(stdout, "%s: replication factor %d -> %d\n", name, topics[name].ReplicationFactor, rf)
		}
	}
	for i, pp := range p.Partitions {
		pi, _ := findInfo(topics[pp.Topic], pp.Partition)
		if err := a.ReassignPartition(ctx, pp.Topic, pp.Partition, pp.Replicas); err != nil {
			return fmt.Errorf("reassign %s-%d to %s (%d of the plan's %d partitions started before it; the assignment printed above undoes them): %w",
				pp.Topic, pp.Partition, joinIDs(pp.Replicas), i, len(p.Partitions), err)
		}
		fmt.Fprintf(stdout, "%s-%d: replicas %s -> %s\n", pp.Topic, pp.Partition, joinIDs(target(pi)), joinIDs(pp.Replicas))
	}
	for _, pp := range p.Partitions {
		if err := waitReassigned(ctx, a, opts, pp.Topic, []int32{pp.Partition}, stdout); err != nil {
			return err
		}
	}
	return nil
}

// runVerifyPlan is --plan FILE --verify: one line per partition saying
// whether it is where the plan puts it; an error unless all are.
func runVerifyPlan(ctx context.Context, a *client.Admin, p plan, stdout io.Writer) error {
	topics, _, err := describeAll(ctx, a, planTopics(p))
	if err != nil {
		return err
	}
	notDone := 0
	for _, pp := range p.Partitions {
		pi, ok := findInfo(topics[pp.Topic], pp.Partition)
		moving := len(pi.AddingReplicas) > 0 || len(pi.RemovingReplicas) > 0
		switch {
		case !ok:
			notDone++
			fmt.Fprintf(stdout, "%s-%d: does not exist\n", pp.Topic, pp.Partition)
		case !slices.Equal(target(pi), pp.Replicas):
			notDone++
			fmt.Fprintf(stdout, "%s-%d: not as planned: replicas %s, planned %s\n", pp.Topic, pp.Partition, replicasText(pi), joinIDs(pp.Replicas))
		case moving:
			notDone++
			fmt.Fprintf(stdout, "%s-%d: in progress: replicas %s, in sync %s\n", pp.Topic, pp.Partition, replicasText(pi), joinIDs(pi.ISR))
		default:
			fmt.Fprintf(stdout, "%s-%d: done: replicas %s, in sync %s, leader %d\n", pp.Topic, pp.Partition,
				joinIDs(pi.Replicas), joinIDs(pi.ISR), pi.Leader)
		}
	}
	if notDone > 0 {
		return fmt.Errorf("%d of the plan's %d partitions are not done", notDone, len(p.Partitions))
	}
	return nil
}

// runCancelPlan is --plan FILE --cancel: it cancels the reassignment of
// every partition of the plan that is still being moved to the plan's
// replicas; the others are left alone, each with a line saying why.
func runCancelPlan(ctx context.Context, a *client.Admin, p plan, stdout io.Writer) error {
	topics, _, err := describeAll(ctx, a, planTopics(p))
	if err != nil {
		return err
	}
	for _, pp := range p.Partitions {
		pi, _ := findInfo(topics[pp.Topic], pp.Partition)
		moving := len(pi.AddingReplicas) > 0 || len(pi.RemovingReplicas) > 0
		switch {
		case !moving:
			fmt.Fprintf(stdout, "%s-%d: nothing to cancel: replicas %s\n", pp.Topic, pp.Partition, joinIDs(pi.Replicas))
		case !slices.Equal(target(pi), pp.Replicas):
			fmt.Fprintf(stdout, "%s-%d: left alone: being moved to %s, not to the plan's %s\n", pp.Topic, pp.Partition,
				joinIDs(target(pi)), joinIDs(pp.Replicas))
		default:
			if err := a.CancelReassignment(ctx, pp.Topic, pp.Partition); err != nil {
				return fmt.Errorf("cancel the reassignment of %s-%d: %w", pp.Topic, pp.Partition, err)
			}
			fmt.Fprintf(stdout, "%s-%d: reassignment cancelled\n", pp.Topic, pp.Partition)
		}
	}
	return nil
}

// writeNewFile writes s to a file that must not exist yet.
func writeNewFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(s); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
