package localcluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"paymentlog/quic"
	"paymentlog/wire"
)

// Errors of the metadata helpers.
var (
	ErrNoController = errors.New("localcluster: no active controller")
	ErrNoLeader     = errors.New("localcluster: partition has no leader")
	ErrNoAnswer     = errors.New("localcluster: no running node answered")
)

// metadataCallTimeout bounds one Metadata request to one node.
const metadataCallTimeout = time.Second

// View is the newest cluster metadata that any running node reported: the
// answer with the highest metadata offset.
type View struct {
	From           int32 // the node that answered
	ControllerID   int32 // -1 when none
	MetadataOffset int64
	Brokers        []wire.BrokerInfo
	Topics         []wire.TopicMetadata
}

// Broker returns broker id's entry.
func (v *View) Broker(id int32) (wire.BrokerInfo, bool) {
	for _, b := range v.Brokers {
		if b.ID == id {
			return b, true
		}
	}
	return wire.BrokerInfo{}, false
}

// Partition returns a partition's metadata.
func (v *View) Partition(topic string, p int32) (wire.PartitionMetadata, bool) {
	for _, t := range v.Topics {
		if t.Name != topic || t.Err != wire.None {
			continue
		}
		for _, pm := range t.Partitions {
			if pm.Partition == p {
				return pm, true
			}
		}
	}
	return wire.PartitionMetadata{}, false
}

// endpoint returns the cluster's client-only QUIC endpoint, created on first use.
func (c *Cluster) endpoint(ctx context.Context) (*quic.Endpoint, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return nil, errSpawnerClosed
	}
	if c.mu.ep != nil {
		return c.mu.ep, nil
	}
	ep, err := quic.New(ctx, quic.Config{TLS: c.ClientTLS(), Logger: c.log})
	if err != nil {
		return nil, fmt.Errorf("localcluster: client endpoint: %w", err)
	}
	c.mu.ep = ep
	return ep, nil
}

// NodeMetadata asks node id for its metadata view of topics (all if none).
func (c *Cluster) NodeMetadata(ctx context.Context, id int32, topics ...string) (*wire.MetadataResponse, error) {
	n, err := c.node(id)
	if err != nil {
		return nil, err
	}
	ep, err := c.endpoint(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, metadataCallTimeout)
	defer cancel()
	var resp wire.MetadataResponse
	if err := ep.Call(quic.Idempotent(ctx), n.addr, wire.TypeMetadata, &wire.MetadataRequest{Topics: topics}, &resp); err != nil {
		return nil, fmt.Errorf("localcluster: node %d: metadata: %w", id, err)
	}
	if resp.Err != wire.None {
		return nil, fmt.Errorf("localcluster: node %d: metadata: %w", id, resp.Err.Err(""))
	}
	return &resp, nil
}

// Metadata asks every running, unpaused node at once and returns the freshest
// answer. It fails only if none answers.
func (c *Cluster) Metadata(ctx context.Context, topics ...string) (*View, error) {
	var (
		mu   sync.Mutex
		best *View
		errs []error
		wg   sync.WaitGroup
	)
	for _, n := range c.Nodes() {
		if !n.Running || n.Paused {
			continue
		}
		wg.Add(1)
		go func(id int32) {
			defer wg.Done()
			r, err := c.NodeMetadata(ctx, id, topics...)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			if best == nil || r.MetadataOffset > best.MetadataOffset {
				best = &View{From: id, ControllerID: r.ControllerID, MetadataOffset: r.MetadataOffset, Brokers: r.Brokers, Topics: r.Topics}
			}
		}(n.ID)
	}
	wg.Wait()
	if best == nil {
		return nil, errors.Join(append([]error{ErrNoAnswer}, errs...)...)
	}
	return best, nil
}

// ActiveController returns the active controller's id.
func (c *Cluster) ActiveController(ctx context.Context) (int32, error) {
	v, err := c.Metadata(ctx)
	if err != nil {
		return -1, err
	}
	if v.ControllerID < 0 {
		return -1, ErrNoController
	}
	return v.ControllerID, nil
}

// PartitionLeader returns a partition's leader and leader epoch.
func (c *Cluster) PartitionLeader(ctx context.Context, topic string, partition int32) (leader, epoch int32, err error) {
	v, err := c.Metadata(ctx, topic)
	if err != nil {
		return -1, -1, err
	}
	pm, ok := v.Partition(topic, partition)
	if !ok {
		return -1, -1, fmt.Errorf("localcluster: %s/%d: %w", topic, partition, wire.UnknownTopicOrPartition.Err(""))
	}
	if pm.Leader < 0 {
		return -1, pm.LeaderEpoch, fmt.Errorf("localcluster: %s/%d: %w", topic, partition, ErrNoLeader)
	}
	return pm.Leader, pm.LeaderEpoch, nil
}

// Ready reports whether a controller is elected and every running node is
// registered and alive (not fenced).
func (c *Cluster) Ready(ctx context.Context) (bool, error) {
	v, err := c.Metadata(ctx)
	if err != nil {
		return false, err
	}
	if v.ControllerID < 0 {
		return false, ErrNoController
	}
	for _, n := range c.Nodes() {
		if !n.Running {
			continue
		}
		b, ok := v.Broker(n.ID)
		if !ok {
			return false, fmt.Errorf("localcluster: node %d not registered", n.ID)
		}
		if b.State != "alive" {
			return false, fmt.Errorf("localcluster: node %d is %s", n.ID, b.State)
		}
	}
	return true, nil
}

// WaitReady waits (see WaitFor) until Ready holds, and fails at once if a node crashed.
func (c *Cluster) WaitReady(ctx context.Context) error {
	return c.WaitFor(ctx, func(ctx context.Context) (bool, error) {
		if cr := c.Crashes(); len(cr) > 0 {
			return false, fmt.Errorf("localcluster: node %d exited: %s (see %s)", cr[0].ID, exitString(cr[0].Err), cr[0].LogPath)
		}
		return c.Ready(ctx)
	})
}

// InSync reports whether every partition of topic has a leader and its full
// replica set in the ISR.
func (c *Cluster) InSync(ctx context.Context, topic string) (bool, error) {
	v, err := c.Metadata(ctx, topic)
	if err != nil {
		return false, err
	}
	return v.InSync(topic)
}

// InSync reports whether the view shows every partition of topic (at least
// one) with a leader and its full replica set in the ISR; the error says
// what is missing.
func (v *View) InSync(topic string) (bool, error) {
	for _, t := range v.Topics {
		if t.Name != topic {
			continue
		}
		if t.Err != wire.None {
			return false, t.Err.Err("")
		}
		if len(t.Partitions) == 0 {
			return false, fmt.Errorf("localcluster: topic %s has no partitions in the metadata", topic)
		}
		for _, p := range t.Partitions {
			if p.Leader < 0 || len(p.ISR) != len(p.Replicas) || !sameSet(p.ISR, p.Replicas) {
				return false, fmt.Errorf("localcluster: %s/%d: leader %d, isr %v of replicas %v", topic, p.Partition, p.Leader, p.ISR, p.Replicas)
			}
		}
		return true, nil
	}
	return false, fmt.Errorf("localcluster: topic %s: %w", topic, wire.UnknownTopicOrPartition.Err(""))
}

func sameSet(a, b []int32) bool {
	for _, x := range b {
		if !slices.Contains(a, x) {
			return false
		}
	}
	return len(a) == len(b)
}
