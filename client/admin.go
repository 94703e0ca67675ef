package client

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"paymentlog/quic"
	"paymentlog/wire"
)

// Admin manages topics and reports cluster state. Obtain one with Client.Admin.
type Admin struct{ c *Client }

// Admin returns the client's admin interface.
func (c *Client) Admin() *Admin { return &Admin{c: c} }

// NodeStatus is one node as the metadata image records it. JSON names are
// those of `paymentlog cluster status --json` (DESIGN §7).
type NodeStatus struct {
	ID                 int32  `json:"id"`
	Addr               string `json:"addr"`
	State              string `json:"state"` // "alive" or "fenced"
	ControllerEligible bool   `json:"controller_eligible"`
	// MetadataVersion is the highest metadata version the node's build
	// applies (a change needing more is refused while it is alive or, for
	// most changes, registered at all; see `cluster unregister`); omitted
	// when the answering node is older than the field.
	MetadataVersion int32 `json:"metadata_version,omitempty"`
	// Rack is the node's --rack (its failure domain); omitted when none.
	Rack string `json:"rack,omitempty"`
}

// ClusterStatus is `paymentlog cluster status --json`.
type ClusterStatus struct {
	ControllerID   int32        `json:"controller_id"` // -1 while there is none
	MetadataOffset int64        `json:"metadata_offset"`
	Nodes          []NodeStatus `json:"nodes"`
	// Configs are the cluster configs as set (AlterClusterConfigs).
	Configs map[string]string `json:"configs,omitempty"`
	// MetadataVersion is the metadata version the cluster uses (0 from a
	// node of a build without versions).
	MetadataVersion int32 `json:"metadata_version,omitempty"`
}

// Alive counts nodes in state "alive".
func (s ClusterStatus) Alive() int {
	n := 0
	for _, b := range s.Nodes {
		if b.State == "alive" {
			n++
		}
	}
	return n
}

// DescribeCluster asks any node for the brokers and the active controller.
func (a *Admin) DescribeCluster(ctx context.Context) (ClusterStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, a.c.cfg.RequestTimeout)
	defer cancel()
	r, _, err := hedged(ctx, a.c.meta.candidates(), a.c.cfg.HedgeDelay, func(ctx context.Context, addr string) (*wire.DescribeClusterResponse, error) {
		var r wire.DescribeClusterResponse
		if err := a.c.call(ctx, addr, wire.TypeDescribeCluster, &wire.DescribeClusterRequest{}, &r); err != nil {
			return nil, err
		}
		if r.Err != wire.None {
			return nil, r.Err.Err("")
		}
		return &r, nil
	})
	if err != nil {
		return ClusterStatus{}, err
	}
	st := ClusterStatus{ControllerID: r.ControllerID, MetadataOffset: r.MetadataOffset, Nodes: make([]NodeStatus, 0, len(r.Brokers)),
		Configs: r.Configs, MetadataVersion: r.MetadataVersion}
	for _, b := range r.Brokers {
		st.Nodes = append(st.Nodes, NodeStatus{ID: b.ID, Addr: b.Addr, State: b.State, ControllerEligible: b.ControllerEligible,
			MetadataVersion: b.MetadataVersion, Rack: b.Rack})
	}
	sort.Slice(st.Nodes, func(i, j int) bool { return st.Nodes[i].ID < st.Nodes[j].ID })
	return st, nil
}

// TopicSpec describes a topic to create. Zero fields take the defaults in
// their comments.
type TopicSpec struct {
	Name              string
	Partitions        int32             // 1
	ReplicationFactor int32             // 3
	MinISR            int32             // 2 (at most ReplicationFactor)
	Configs           map[string]string // topic configs; an unknown key is refused (wire.InvalidConfig)
}

// CreateTopic creates a topic through the active controller and waits until
// every node that answers sees it with a leader for each partition and its
// broker has taken the partitions, so a produce or fetch that follows is
// not refused as UnknownTopicOrPartition by a leader still opening its log.
// It returns the topic id. An existing topic yields an error matching
// wire.TopicAlreadyExists (see ErrorCode); when an earlier attempt of this
// call failed in transit or timed out, its message says that attempt may
// have created the topic.
func (a *Admin) CreateTopic(ctx context.Context, spec TopicSpec) (string, error) {
	if spec.Partitions == 0 {
		spec.Partitions = 1
	}
	if spec.ReplicationFactor == 0 {
		spec.ReplicationFactor = 3
	}
	if spec.MinISR == 0 {
		spec.MinISR = min(2, spec.ReplicationFactor)
	}
	req := &wire.CreateTopicRequest{Name: spec.Name, Partitions: spec.Partitions, ReplicationFactor: spec.ReplicationFactor, MinISR: spec.MinISR, Configs: spec.Configs}
	var resp wire.CreateTopicResponse
	unsure, err := a.toController(ctx, "create topic", wire.TypeCreateTopic, req, func() any { resp = wire.CreateTopicResponse{}; return &resp },
		func() (wire.ErrorCode, string) { return resp.Err, resp.Message })
	if err != nil {
		if unsure && resp.Err == wire.TopicAlreadyExists {
			return "", fmt.Errorf("client: create topic %q: an earlier attempt of this call failed in transit or timed out and may have created it: %w", spec.Name, err)
		}
		return "", err
	}
	err = a.waitTopic(ctx, spec.Name, func(t *wire.TopicMetadata) bool {
		return t != nil && len(t.Partitions) == int(spec.Partitions) && allLed(t)
	})
	if err != nil {
		return resp.TopicID, fmt.Errorf("client: topic %q was created but is not ready: %w", spec.Name, err)
	}
	if err := a.waitBrokersTook(ctx, resp.MetadataOffset); err != nil {
		return resp.TopicID, fmt.Errorf("client: topic %q was created but not every node has taken its partitions yet: %w", spec.Name, err)
	}
	return resp.TopicID, nil
}

// DeleteTopic deletes a topic through the active controller and waits until
// no node that answers lists it. A missing topic yields an error matching
// wire.UnknownTopicOrPartition, except on a retry after an attempt that may
// have deleted it (its answer lost, or NotController or Timeout), which
// succeeds.
func (a *Admin) DeleteTopic(ctx context.Context, name string) error {
	var resp wire.DeleteTopicResponse
	unsure, err := a.toController(ctx, "delete topic", wire.TypeDeleteTopic, &wire.DeleteTopicRequest{Name: name},
		func() any { resp = wire.DeleteTopicResponse{}; return &resp },
		func() (wire.ErrorCode, string) { return resp.Err, resp.Message })
	// An earlier attempt whose answer was lost (or answered NotController
	// or Timeout) may have deleted the topic: the retry then finds none,
	// which is what was asked.
	if err != nil && !(unsure && resp.Err == wire.UnknownTopicOrPartition) {
		return err
	}
	if err := a.waitTopic(ctx, name, func(t *wire.TopicMetadata) bool { return t == nil }); err != nil {
		return fmt.Errorf("client: topic %q was deleted but is still listed: %w", name, err)
	}
	return nil
}

// toController sends a request to the active controller (from the metadata's
// controller id and broker list), refreshing and retrying on NotController,
// an unknown controller or a failed call, until ctx ends. newResp returns a
// fresh response to decode into; code reads its error. unsure reports that
// an earlier attempt failed in transit or answered Timeout or NotController,
// so it may have been applied: a refusal that follows (TopicAlreadyExists)
// may be its doing. NotController counts: a controller that loses its role
// after proposing the request's records answers it, and the records may
// still commit under the next one (node/controller/batch.go).
func (a *Admin) toController(ctx context.Context, what string, t quic.FrameType, req any, newResp func() any, code func() (wire.ErrorCode, string)) (unsure bool, _ error) {
	backoff := 25 * time.Millisecond
	var last error
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if err := sleepCtx(ctx, backoff); err != nil {
				return unsure, a.giveUp(what, err, last)
			}
			backoff = min(2*backoff, time.Second)
			if err := a.c.meta.refresh(ctx); err != nil {
				last = err
				if ctx.Err() != nil {
					return unsure, a.giveUp(what, ctx.Err(), last)
				}
				continue
			}
		}
		snap, err := a.c.meta.get(ctx)
		if err != nil {
			last = err
			if ctx.Err() != nil {
				return unsure, a.giveUp(what, ctx.Err(), last)
			}
			continue
		}
		addr, ok := snap.addr(snap.controller)
		if !ok {
			last = wire.NotController.Err("no active controller")
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, a.c.cfg.RequestTimeout)
		err = a.c.call(cctx, addr, t, req, newResp())
		cancel()
		if errors.Is(err, quic.ErrUnknownType) {
			// Refused unread by a build that predates the request: asking
			// it again changes nothing (ctx would end first).
			return unsure, fmt.Errorf("client: %s: the active controller (node %d at %s) does not know this request: "+
				"its build is older than this client's: %w", what, snap.controller, addr, err)
		}
		if err != nil {
			last = fmt.Errorf("controller %d at %s: %w", snap.controller, addr, err)
			unsure = true
			continue
		}
		c, msg := code()
		switch c {
		case wire.None:
			return unsure, nil
		case wire.NotController, wire.Timeout, wire.BrokerNotAvailable, wire.LeaderNotAvailable:
			last = c.Err(msg)
			if c == wire.Timeout || c == wire.NotController {
				unsure = true
			}
			continue
		default:
			return unsure, c.Err(msg)
		}
	}
}

func (a *Admin) giveUp(what string, cause, last error) error {
	if last != nil {
		return fmt.Errorf("client: %s: %w (last error: %v)", what, cause, last)
	}
	return fmt.Errorf("client: %s: %w", what, cause)
}

// waitTopic polls every node's metadata for topic until ok holds on every
// node that answers (at least one), or ctx ends. ok gets nil when the node
// does not list the topic.
func (a *Admin) waitTopic(ctx context.Context, topic string, ok func(*wire.TopicMetadata) bool) error {
	err := a.untilEveryNode(ctx, func(ctx context.Context, addr string) func() bool {
		var r wire.MetadataResponse
		if err := a.c.call(ctx, addr, wire.TypeMetadata, &wire.MetadataRequest{Topics: []string{topic}}, &r); err != nil || r.Err != wire.None {
			return nil
		}
		var tm *wire.TopicMetadata
		for i := range r.Topics {
			if r.Topics[i].Name == topic && r.Topics[i].Err == wire.None {
				tm = &r.Topics[i]
			}
		}
		return func() bool { return ok(tm) }
	})
	if err != nil {
		return err
	}
	return a.c.meta.refresh(ctx)
}

// untilEveryNode asks every node not known to be fenced (the bootstrap
// nodes when none is known), in parallel with a 1 s limit each, until the
// answer of each that answers (at least one) is good, backing off between
// rounds, or ctx ends. ask returns nil when the node did not answer, else
// the function judging its answer, which is called with the others' judges
// serialized.
func (a *Admin) untilEveryNode(ctx context.Context, ask func(ctx context.Context, addr string) (judge func() bool)) error {
	backoff := 20 * time.Millisecond
	for {
		snap, err := a.c.meta.get(ctx)
		if err != nil {
			return err
		}
		var addrs []string
		for _, b := range snap.brokerList() {
			if b.State != "fenced" && b.Addr != "" {
				addrs = append(addrs, b.Addr)
			}
		}
		if len(addrs) == 0 {
			addrs = a.c.cfg.Bootstrap
		}
		answered, good := 0, 0
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, addr := range addrs {
			wg.Go(func() {
				cctx, cancel := context.WithTimeout(ctx, time.Second)
				defer cancel()
				judge := ask(cctx, addr)
				if judge == nil {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				answered++
				if judge() {
					good++
				}
			})
		}
		wg.Wait()
		if answered > 0 && good == answered {
			return nil
		}
		if err := sleepCtx(ctx, backoff); err != nil {
			return err
		}
		backoff = min(2*backoff, 500*time.Millisecond)
		_ = a.c.meta.refresh(ctx)
	}
}

// ListTopics returns the names of all topics, sorted.
func (a *Admin) ListTopics(ctx context.Context) ([]string, error) {
	if err := a.c.meta.refresh(ctx); err != nil {
		return nil, err
	}
	snap := a.c.meta.current()
	names := make([]string, 0, len(snap.topics))
	for n := range snap.topics {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// PartitionInfo is one partition in `topic describe --json` (DESIGN §7).
type PartitionInfo struct {
	Partition   int32   `json:"partition"`
	Leader      int32   `json:"leader"` // -1 while offline
	LeaderEpoch int32   `json:"leader_epoch"`
	Replicas    []int32 `json:"replicas"`
	ISR         []int32 `json:"isr"`
	// ELR: the eligible leader replicas (out of the ISR, holding every
	// record below the HW; elected when no ISR member is live).
	ELR            []int32 `json:"elr,omitempty"`
	HighWatermark  int64   `json:"high_watermark"`   // -1 if the leader did not answer
	LogStartOffset int64   `json:"log_start_offset"` // -1 if the leader did not answer
	// AddingReplicas and RemovingReplicas are set while the partition is
	// being reassigned (Admin.ReassignPartition).
	AddingReplicas   []int32 `json:"adding_replicas,omitempty"`
	RemovingReplicas []int32 `json:"removing_replicas,omitempty"`
	// LostReplicas, with an empty ISR: the replicas that lost their storage
	// as its last in-sync replica; an unclean election takes them last.
	LostReplicas []int32 `json:"lost_replicas,omitempty"`
	// ReplicaStates is each replica's own view, filled in only by
	// DescribeTopicReplicas (`topic describe --replicas`).
	ReplicaStates []ReplicaState `json:"replica_states,omitempty"`
}

// TopicDescription is `paymentlog topic describe NAME --json`.
type TopicDescription struct {
	Name              string          `json:"name"`
	Partitions        []PartitionInfo `json:"partitions"`
	ID                string          `json:"id,omitempty"`
	ReplicationFactor int32           `json:"replication_factor"`
	MinISR            int32           `json:"min_insync_replicas"`
	// Configs are the topic's configs as set; keys it does not set take
	// their defaults (the node's for retention, false for unclean election).
	Configs map[string]string `json:"configs"`
	// Racks maps each replica's broker to its --rack, for the brokers that
	// have one; omitted when none has.
	Racks map[int32]string `json:"racks,omitempty"`
}

// PartitionCount is Client.PartitionCount: topic's number of partitions,
// or an error matching wire.UnknownTopicOrPartition for a topic that does
// not exist.
func (a *Admin) PartitionCount(ctx context.Context, topic string) (int, error) {
	return a.c.PartitionCount(ctx, topic)
}

// DescribeTopic returns a topic's partitions from fresh metadata, with each
// partition's high watermark and log start offset asked of its leader.
func (a *Admin) DescribeTopic(ctx context.Context, name string) (TopicDescription, error) {
	if err := a.c.meta.refresh(ctx); err != nil {
		return TopicDescription{}, err
	}
	t, ok := a.c.meta.current().topics[name]
	if !ok {
		return TopicDescription{}, a.c.missingTopic(ctx, name)
	}
	d := TopicDescription{Name: t.Name, ID: t.ID, ReplicationFactor: t.ReplicationFactor, MinISR: t.MinISR,
		Configs: topicConfigs(t)}
	brokers := a.c.meta.current().brokers
	parts := make([]int32, 0, len(t.Partitions))
	for _, p := range t.Partitions {
		for _, id := range p.Replicas {
			if r := brokers[id].Rack; r != "" {
				if d.Racks == nil {
					d.Racks = map[int32]string{}
				}
				d.Racks[id] = r
			}
		}
		d.Partitions = append(d.Partitions, PartitionInfo{
			Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
			Replicas: nonNil(p.Replicas), ISR: nonNil(p.ISR), ELR: p.ELR, HighWatermark: -1, LogStartOffset: -1,
			AddingReplicas: p.AddingReplicas, RemovingReplicas: p.RemovingReplicas, LostReplicas: p.LostReplicas,
		})
		if p.Leader >= 0 {
			parts = append(parts, p.Partition)
		}
	}
	if len(parts) > 0 {
		lctx, cancel := context.WithTimeout(ctx, a.c.cfg.RequestTimeout)
		defer cancel()
		var hw, lso map[int32]int64
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); hw, _, _ = a.c.listOffsets(lctx, name, parts, wire.Latest, false) }()
		go func() { defer wg.Done(); lso, _, _ = a.c.listOffsets(lctx, name, parts, wire.Earliest, false) }()
		wg.Wait()
		for i := range d.Partitions {
			p := &d.Partitions[i]
			if o, ok := hw[p.Partition]; ok {
				p.HighWatermark = o
			}
			if o, ok := lso[p.Partition]; ok {
				p.LogStartOffset = o
			}
		}
	}
	return d, nil
}

func nonNil(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return s
}

// allLed reports whether every partition of t has a leader.
func allLed(t *wire.TopicMetadata) bool {
	for _, p := range t.Partitions {
		if p.Leader < 0 {
			return false
		}
	}
	return true
}
