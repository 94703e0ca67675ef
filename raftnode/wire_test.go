package raftnode_test

import (
	"testing"

	"paymentlog/raftnode"
	"paymentlog/wire"
)

// raftnode does not import wire (dependency direction); this pins the frame type.
func TestFrameTypeIsWireRaftMessage(t *testing.T) {
	if raftnode.FrameType != wire.TypeRaftMessage {
		t.Fatalf("raftnode.FrameType = %d, wire.TypeRaftMessage = %d", raftnode.FrameType, wire.TypeRaftMessage)
	}
}
