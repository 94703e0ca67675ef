package node

import (
	"context"
	"time"
)

// SetRejoinGate makes the node started with cfg call gate before each round
// of its rejoin guard's DescribeQuorum questions (a test holds a round back
// until gate returns).
func SetRejoinGate(cfg *Config, gate func(context.Context)) { cfg.rejoinGate = gate }

// SetHeartbeatHold makes the node started with cfg hold back its broker
// heartbeats while hold returns true (the controller then fences it).
func SetHeartbeatHold(cfg *Config, hold func() bool) { cfg.heartbeatHold = hold }

// SetApplyGate makes the node started with cfg call gate before applying
// each committed metadata entry (a test holds a replay at one index until
// gate returns).
func SetApplyGate(cfg *Config, gate func(index uint64)) { cfg.applyGate = gate }

// SetProbesUnanswered makes the port probes of the node started with cfg go
// unanswered (the dead host's ICMP errors for this peer spent).
func SetProbesUnanswered(cfg *Config) { cfg.probesUnanswered = true }

// SetRaftDeaf makes the node started with cfg drop every raft frame it
// receives while deaf returns true: its metadata log hears nothing, the
// rest of its traffic flows.
func SetRaftDeaf(cfg *Config, deaf func() bool) {
	cfg.raftDropIncoming = func(uint64) bool { return deaf() }
}

// Incarnation is the node process's broker incarnation.
func (n *Node) Incarnation() int64 { return n.incarnation }

// LastContinue returns when the node last read a SIGCONT (zero: never).
func (n *Node) LastContinue() time.Time { return n.stall.lastContinue() }
