package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"paymentlog/client"
	"paymentlog/node/metadata"
)

// A reassignment plan is Kafka's reassignment JSON file, as written by
// `kafka-reassign-partitions --generate` and read by `--execute`, `--verify`
// and `--cancel`:
//
//	{"version": 1, "partitions": [
//	  {"topic": "payments", "partition": 0, "replicas": [4, 2, 3]},
//	  ...]}
//
// replicas are in preference order (the first is the preferred leader).
// Kafka's per-replica "log_dirs" is accepted and must be "any" (a node has
// one data directory). Any other key is refused by name, so that a typo
// ("replica") does not pass for an empty plan. A topic's partitions in a
// plan all have one replica count; when it differs from the topic's
// replication factor, the plan lists every partition of the topic and its
// execution changes the replication factor first.
type plan struct {
	Version    int             `json:"version"`
	Partitions []planPartition `json:"partitions"`
}

type planPartition struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Replicas  []int32  `json:"replicas"`
	LogDirs   []string `json:"log_dirs,omitempty"`
}

// maxPlanBytes bounds a plan file (10 000 partitions of 16 replicas fit).
const maxPlanBytes = 16 << 20

// parsePlan reads and checks a plan: version 1, at least one partition,
// each with a topic, a partition number ≥ 0 and 1-16 distinct positive
// broker ids, no partition twice, log_dirs (if given) one "any" per
// replica.
func parsePlan(data []byte) (plan, error) {
	if len(data) > maxPlanBytes {
		return plan{}, fmt.Errorf("plan: %d bytes, more than the %d a plan may have", len(data), maxPlanBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var p plan
	if err := dec.Decode(&p); err != nil {
		return plan{}, fmt.Errorf("plan: %w", err)
	}
	if dec.More() {
		return plan{}, errors.New("plan: more than one JSON value")
	}
	if p.Version != 1 {
		return plan{}, fmt.Errorf("plan: version %d, want 1", p.Version)
	}
	if len(p.Partitions) == 0 {
		return plan{}, errors.New("plan: no partitions")
	}
	type key struct {
		topic     string
		partition int32
	}
	seen := map[key]bool{}
	for i, pp := range p.Partitions {
		name := fmt.Sprintf("%s-%d", pp.Topic, pp.Partition)
		switch {
		case pp.Topic == "":
			return plan{}, fmt.Errorf("plan: partitions[%d] has no topic", i)
		case pp.Partition < 0:
			return plan{}, fmt.Errorf("plan: %s: partition must be 0 or more", name)
		case len(pp.Replicas) == 0 || len(pp.Replicas) > 16:
			return plan{}, fmt.Errorf("plan: %s: %d replicas, want 1-16", name, len(pp.Replicas))
		case seen[key{pp.Topic, pp.Partition}]:
			return plan{}, fmt.Errorf("plan: %s listed twice", name)
		case pp.LogDirs != nil && len(pp.LogDirs) != len(pp.Replicas):
			return plan{}, fmt.Errorf("plan: %s: %d log_dirs for %d replicas", name, len(pp.LogDirs), len(pp.Replicas))
		}
		seen[key{pp.Topic, pp.Partition}] = true
		for j, r := range pp.Replicas {
			if r <= 0 {
				return plan{}, fmt.Errorf("plan: %s: %d is not a broker id", name, r)
			}
			if slices.Contains(pp.Replicas[:j], r) {
				return plan{}, fmt.Errorf("plan: %s: broker %d listed twice", name, r)
			}
		}
		for _, d := range pp.LogDirs {
			if d != "any" {
				return plan{}, fmt.Errorf("plan: %s: log_dirs %q: a node has one data directory, give \"any\"", name, d)
			}
		}
	}
	return p, nil
}

// marshalPlan renders a plan as Kafka writes it: one line per partition.
func marshalPlan(p plan) string {
	var b strings.Builder
	b.WriteString(`{"version":1,"partitions":[`)
	for i, pp := range p.Partitions {
		if i > 0 {
			b.WriteString(",")
		}
		r, _ := json.Marshal(planPartition{Topic: pp.Topic, Partition: pp.Partition, Replicas: pp.Replicas})
		b.WriteString("\n  ")
		b.Write(r)
	}
	b.WriteString("\n]}\n")
	return b.String()
}

// currentPlan is the plan that puts the partitions of p back where they are
// now (their targets, for partitions being reassigned): what to keep for a
// rollback.
func currentPlan(p plan, topics map[string]client.TopicDescription) plan {
	out := plan{Version: 1}
	for _, pp := range p.Partitions {
		if pi, ok := findInfo(topics[pp.Topic], pp.Partition); ok {
			out.Partitions = append(out.Partitions, planPartition{Topic: pp.Topic, Partition: pp.Partition, Replicas: target(pi)})
		}
	}
	return out
}

// generatePlan proposes moving every partition of topics onto brokers,
// keeping each topic's replica count: partition i's replicas are brokers
// i, i+1, ... (mod len(brokers)), with each topic starting after the last
// one's first broker so that leaders spread over several topics too. When
// rack gives any broker a rack, the brokers are taken in rack-alternated
// order (metadata.RackAlternated) and a broker whose rack already holds one
// of the partition's replicas is skipped while another rack holds none.
func generatePlan(topics []client.TopicDescription, brokers []int32, rack func(int32) string) (plan, error) {
	out := plan{Version: 1}
	racks := metadata.RackKeys(brokers, rack)
	if racks != nil {
		brokers = metadata.RackAlternated(brokers, racks)
	}
	nr := metadata.DistinctRacks(brokers, racks)
	start := 0
	for _, t := range topics {
		for _, pi := range t.Partitions {
			n := len(target(pi))
			if n > len(brokers) {
				return plan{}, fmt.Errorf("%s-%d has %d replicas and only %d brokers were given", t.Name, pi.Partition, n, len(brokers))
			}
			reps := make([]int32, 0, n)
			used := map[string]bool{}
			for k := 0; len(reps) < n; k++ {
				b := brokers[(start+int(pi.Partition)+k)%len(brokers)]
				if slices.Contains(reps, b) || (racks != nil && used[racks[b]] && len(used) < nr) {
					continue
				}
				reps = append(reps, b)
				used[racks[b]] = true
			}
			out.Partitions = append(out.Partitions, planPartition{Topic: t.Name, Partition: pi.Partition, Replicas: reps})
		}
		start += len(t.Partitions)
	}
	return out, nil
}

// checkPlan checks a plan against the topics it names (all described):
// every partition exists, and a topic whose partitions get another replica
// count than its replication factor has all of them in the plan with one
// count. It returns the topics whose replication factor the plan changes.
func checkPlan(p plan, topics map[string]client.TopicDescription) (map[string]int32, error) {
	counts := map[string]map[int]bool{}
	listed := map[string]int{}
	for _, pp := range p.Partitions {
		if _, ok := findInfo(topics[pp.Topic], pp.Partition); !ok {
			return nil, fmt.Errorf("plan: %s-%d does not exist", pp.Topic, pp.Partition)
		}
		if counts[pp.Topic] == nil {
			counts[pp.Topic] = map[int]bool{}
		}
		counts[pp.Topic][len(pp.Replicas)] = true
		listed[pp.Topic]++
	}
	rf := map[string]int32{}
	for name, cs := range counts {
		t := topics[name]
		if len(cs) == 1 && cs[int(t.ReplicationFactor)] {
			continue
		}
		if len(cs) > 1 || listed[name] != len(t.Partitions) {
			return nil, fmt.Errorf("plan: the partitions of %s have different replica counts from its replication factor %d; "+
				"a plan that changes it must give all %d partitions one count", name, t.ReplicationFactor, len(t.Partitions))
		}
		for n := range cs {
			rf[name] = int32(n)
		}
	}
	return rf, nil
}

// target is a partition's target replica set: its replicas less those a
// reassignment in progress is removing.
func target(pi client.PartitionInfo) []int32 {
	return slices.DeleteFunc(slices.Clone(pi.Replicas), func(r int32) bool { return slices.Contains(pi.RemovingReplicas, r) })
}

func findInfo(t client.TopicDescription, partition int32) (client.PartitionInfo, bool) {
	for _, pi := range t.Partitions {
		if pi.Partition == partition {
			return pi, true
		}
	}
	return client.PartitionInfo{}, false
}

// planTopics returns the plan's topic names, in first-mention order.
func planTopics(p plan) []string {
	var out []string
	for _, pp := range p.Partitions {
		if !slices.Contains(out, pp.Topic) {
			out = append(out, pp.Topic)
		}
	}
	return out
}
