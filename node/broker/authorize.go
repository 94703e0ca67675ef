package broker

import (
	"paymentlog/quic"
	"paymentlog/wire"
)

// Authorize (Config.Authorize) decides whether peer may perform op
// (wire.OpWrite for Produce, OpRead for Fetch, OpDescribe for ListOffsets,
// DescribeReplica and DescribeProducers) on topic: nil to allow, else the error to answer
// every partition of the request with. A nil Authorize allows everything.
type Authorize func(peer quic.Peer, op, topic string) *wire.Error

// authorize applies Config.Authorize.
func (b *Broker) authorize(peer quic.Peer, op, topic string) *wire.Error {
	if b.cfg.Authorize == nil {
		return nil
	}
	return b.cfg.Authorize(peer, op, topic)
}
