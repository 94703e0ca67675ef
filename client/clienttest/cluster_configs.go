package clienttest

import (
	"maps"

	"paymentlog/wire"
)

// Cluster configs (wire/cluster_config.go) and a topic's configs
// (wire/alter_configs.go): changed through the active controller (the
// others answer NotController with the hint), each change a metadata
// change. The fake keeps no cluster config and checks no topic config
// (a topic's are shown in the metadata). Each broker's DescribeCluster
// reports a BrokerOffset: the metadata offset, unless HoldBroker holds it
// where it was, as a real node's broker trails its image for a moment.

// HoldBroker holds (on) or releases (off) the BrokerOffset that broker id's
// DescribeCluster answers report at the metadata offset of now.
func (c *Cluster) HoldBroker(id int32, on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.brokerHeld == nil {
		c.mu.brokerHeld = map[int32]int64{}
	}
	if on {
		c.mu.brokerHeld[id] = c.mu.moff
	} else {
		delete(c.mu.brokerHeld, id)
	}
}

func (c *Cluster) alterClusterConfigs(addr string, r *wire.AlterClusterConfigsRequest) *wire.AlterClusterConfigsResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.brokerAt(addr) != c.mu.controller {
		return &wire.AlterClusterConfigsResponse{Err: wire.NotController, ControllerID: c.mu.controller}
	}
	if len(r.Set)+len(r.Delete) > 0 {
		c.bumpLocked()
	}
	return &wire.AlterClusterConfigsResponse{MetadataOffset: c.mu.moff, ControllerID: -1}
}

func (c *Cluster) alterConfigs(addr string, r *wire.AlterConfigsRequest) *wire.AlterConfigsResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.brokerAt(addr) != c.mu.controller {
		return &wire.AlterConfigsResponse{Err: wire.NotController, ControllerID: c.mu.controller}
	}
	t, ok := c.mu.topics[r.Topic]
	if !ok {
		return &wire.AlterConfigsResponse{Err: wire.UnknownTopicOrPartition, ControllerID: -1}
	}
	if t.configs == nil {
		t.configs = map[string]string{}
	}
	maps.Copy(t.configs, r.Set)
	for _, k := range r.Delete {
		delete(t.configs, k)
	}
	c.bumpLocked()
	return &wire.AlterConfigsResponse{MetadataOffset: c.mu.moff, ControllerID: -1}
}

func (c *Cluster) describeCluster(addr string) *wire.DescribeClusterResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	boff := c.mu.moff
	if held, ok := c.mu.brokerHeld[c.brokerAt(addr)]; ok {
		boff = held
	}
	return &wire.DescribeClusterResponse{ControllerID: c.mu.controller, MetadataOffset: c.mu.moff, BrokerOffset: &boff,
		Brokers: append([]wire.BrokerInfo(nil), c.mu.brokers...)}
}
