package chaos

import "fmt"

// victimChoice is the node a fault hits, how it was chosen, and the kind of
// fault that makes it.
type victimChoice struct {
	victim int32
	target string // "random", "leader of partition 2", "active controller"
	// kind is the fault as applied: a kill-leader or kill-controller that
	// found no leader or controller kills a random node, which is a
	// kill-node (a pause or partition stays what it is).
	kind     Kind
	fallback bool   // the fault's target was unknown: a random node instead
	note     string // why it fell back
}

// chooseVictim resolves f's victim among ids: node ids[Pick%len(ids)], or
// for a kill-leader (or a pause or partition aimed at a leader) the current
// leader of partition Pick%partitions, for a kill-controller (or one aimed at
// the controller) the active controller. leader and controller look those
// up; when they fail, the random node is the victim and the choice says so.
func chooseVictim(f Fault, ids []int32, partitions int, leader func(p int32) (int32, error), controller func() (int32, error)) victimChoice {
	c := victimChoice{victim: ids[f.Pick%len(ids)], target: "random", kind: f.Kind}
	aim := f.Kind
	switch f.Target {
	case TargetController:
		aim = KillController
	case TargetLeader:
		aim = KillLeader
	}
	switch aim {
	case KillLeader:
		p := int32(f.Pick % partitions)
		l, err := leader(p)
		if err == nil {
			c.victim, c.target = l, fmt.Sprintf("leader of partition %d", p)
			return c
		}
		c.note = fmt.Sprintf("no leader for partition %d (%v): random node instead", p, err)
	case KillController:
		id, err := controller()
		if err == nil {
			c.victim, c.target = id, "active controller"
			return c
		}
		c.note = fmt.Sprintf("no active controller (%v): random node instead", err)
	default:
		return c
	}
	c.fallback = true
	if f.Kind.IsKill() {
		c.kind = KillNode
		c.note += ", counted as " + string(KillNode)
	}
	return c
}

// choosePeer is the node a Bridge fault cuts from victim: the other nodes,
// in id order, chosen by pick.
func choosePeer(victim int32, ids []int32, pick int) int32 {
	var others []int32
	for _, id := range ids {
		if id != victim {
			others = append(others, id)
		}
	}
	if len(others) == 0 {
		return 0
	}
	return others[pick%len(others)]
}
