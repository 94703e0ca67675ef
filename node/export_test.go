package node

import "context"

// SetRejoinGate makes the node started with cfg call gate before each round
// of its rejoin guard's DescribeQuorum questions (a test holds a round back
// until gate returns).
func SetRejoinGate(cfg *Config, gate func(context.Context)) { cfg.rejoinGate = gate }
