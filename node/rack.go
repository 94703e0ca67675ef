package node

// rackOf is broker id's --rack in the image this node applied ("" for none
// or an unknown broker), for fetches from the consumer's rack.
func (n *Node) rackOf(id int32) string {
	b, _ := n.store.Image().Broker(id)
	return b.Rack
}
