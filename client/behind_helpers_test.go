package client

import (
	"sync/atomic"

	"paymentlog/client/clienttest"
	"paymentlog/quic"
	"paymentlog/wire"
)

// behindLeader counts the requests of one type a fake cluster got, the
// first n of them refused with UnknownLeaderEpoch (a leader that has not
// applied the metadata naming it yet), and the Metadata refreshes (not
// watches) asked meanwhile.
type behindLeader struct{ requests, refreshes atomic.Int32 }

func refuseAsBehind(fc *clienttest.Cluster, ty quic.FrameType, n int32) *behindLeader {
	bl := &behindLeader{}
	fc.SetIntercept(func(_ string, t quic.FrameType, req any) clienttest.Action {
		switch t {
		case wire.TypeMetadata:
			if r, ok := req.(*wire.MetadataRequest); ok && r.MaxWaitMs == 0 {
				bl.refreshes.Add(1)
			}
		case ty:
			if bl.requests.Add(1) <= n {
				return clienttest.Action{Kind: clienttest.Refuse, Code: wire.UnknownLeaderEpoch}
			}
		}
		return clienttest.Action{}
	})
	return bl
}
