package node

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Health endpoints, served beside /metrics (README, "Health checks"), for
// load balancers, Kubernetes probes and rolling restarts. Each answers 200
// "ok" or 503 with one reason per line:
//
//   - /healthz: the node runs (it has not stopped on its own and is not
//     shutting down).
//   - /readyz: the node serves its share of the cluster: registered at this
//     start, not fenced, its disk not stalled (diskstall.go), not in a
//     controlled shutdown, and in the ISR of
//     every partition it is a replica of (the controller's committed view),
//     except those a reassignment is adding it to (copying them may take
//     hours, and the node serves meanwhile). A restarted node becomes ready
//     once it has caught up everywhere.
//   - /safe-to-stop: stopping this node now keeps every partition writable
//     with acks=all and the metadata quorum with a majority: no partition
//     whose ISR holds it would fall below its topic's min.insync.replicas
//     (or lose its last in-sync replica), and, on a controller, the other
//     live voters are still a majority of the voters. A rolling restart
//     waits for /readyz on the node it restarted, then for /safe-to-stop on
//     the next (scripts/cluster.sh roll).
//
// The checks read the node's metadata image: a replica the leader has just
// dropped from the ISR counts as in sync until the controller's change is
// applied here (milliseconds).

// healthMaxNamed caps the partitions one reason names.
const healthMaxNamed = 10

// partitionHealth is what the checks need of one partition this node is a
// replica of.
type partitionHealth struct {
	name   string // topic-partition
	isr    []int32
	inSync bool // this node is in the ISR
	adding bool // a reassignment is adding this node: not in sync yet, by design
	minISR int32
}

// healthView is what the checks read, gathered from the node (healthOf).
type healthView struct {
	self         int32
	stopping     bool // stopped on its own, or shutting down
	registered   bool // the image lists this broker at this start's incarnation
	fenced       bool
	shuttingDown bool   // a controlled shutdown is under way
	diskStall    string // why the disk counts as stalled; "" when it does not
	// keepsController: aside for its disk, yet the active controller (no
	// other voter is live to take the leadership: diskstall_raft.go).
	keepsController bool
	partitions      []partitionHealth
	// voters are the controller-eligible nodes (the raft voters) and
	// liveVoters those the image lists registered, unfenced and not shutting
	// down; both empty when this node is not a voter.
	voters, liveVoters []int32
}

// notReady lists why the node is not ready (none: ready).
func (v healthView) notReady() []string {
	var why []string
	switch {
	case v.stopping:
		return []string{"the node is stopping"}
	case !v.registered:
		why = append(why, "not registered with the controller yet (at this start)")
	case v.fenced:
		why = append(why, "fenced by the controller (no heartbeat answered recently, or catching up on metadata)")
	case v.shuttingDown:
		why = append(why, "in a controlled shutdown")
	}
	if v.diskStall != "" {
		why = append(why, v.diskStall)
	}
	if v.keepsController {
		why = append(why, "aside for its disk, yet still the active controller: no other voter is live to take the leadership")
	}
	var behind []string
	for _, p := range v.partitions {
		if !p.inSync && !p.adding {
			behind = append(behind, p.name)
		}
	}
	if len(behind) > 0 {
		why = append(why, fmt.Sprintf("not in the ISR of %d of its %d partitions: %s", len(behind), len(v.partitions), named(behind)))
	}
	return why
}

// unsafeToStop lists why stopping the node now would stop writes or the
// metadata quorum (none: safe).
func (v healthView) unsafeToStop() []string {
	var why, last, belowMin []string
	for _, p := range v.partitions {
		switch {
		case !p.inSync:
		case len(p.isr) == 1:
			last = append(last, p.name)
		case int32(len(p.isr)-1) < p.minISR:
			belowMin = append(belowMin, fmt.Sprintf("%s (ISR %v, min.insync.replicas %d)", p.name, p.isr, p.minISR))
		}
	}
	if len(last) > 0 {
		why = append(why, fmt.Sprintf("the only in-sync replica of %d partitions (they would go offline): %s", len(last), named(last)))
	}
	if len(belowMin) > 0 {
		why = append(why, fmt.Sprintf("%d partitions would fall below min.insync.replicas (acks=all writes refused): %s", len(belowMin), named(belowMin)))
	}
	if len(v.voters) > 0 {
		others := len(v.liveVoters)
		if slices.Contains(v.liveVoters, v.self) {
			others--
		}
		if need := len(v.voters)/2 + 1; others < need {
			why = append(why, fmt.Sprintf("the metadata quorum would lose its majority: %d other live voters of %d (%v live), %d needed", others, len(v.voters), v.liveVoters, need))
		}
	}
	return why
}

func named(names []string) string {
	if len(names) <= healthMaxNamed {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:healthMaxNamed], ", ") + fmt.Sprintf(" and %d more", len(names)-healthMaxNamed)
}

// healthOf gathers the view from the node's state and metadata image.
func (n *Node) healthOf() healthView {
	n.mu.Lock()
	stopping, fenced := n.mu.closing, n.mu.fenced
	n.mu.Unlock()
	select {
	case <-n.done:
		stopping = true
	default:
	}
	img := n.store.Image()
	v := healthView{self: n.cfg.ID, stopping: stopping, fenced: fenced, diskStall: n.diskStallReason(),
		keepsController: n.handOffStats().keeps}
	if b, ok := img.Broker(n.cfg.ID); ok && b.Incarnation == n.incarnation {
		v.registered = true
		v.fenced = v.fenced || b.Fenced
		v.shuttingDown = b.ShuttingDown
	}
	for _, p := range img.PartitionsOf(n.cfg.ID) {
		minISR := int32(1)
		if t, ok := img.Topic(p.Topic); ok {
			minISR = t.MinISR
		}
		v.partitions = append(v.partitions, partitionHealth{
			name: fmt.Sprintf("%s-%d", p.Topic, p.Partition), isr: p.ISR, inSync: slices.Contains(p.ISR, n.cfg.ID),
			adding: slices.Contains(p.Adding, n.cfg.ID), minISR: minISR})
	}
	if _, voter := n.cfg.Controllers[n.cfg.ID]; voter {
		for id := range n.cfg.Controllers {
			v.voters = append(v.voters, id)
			if img.Live(id) {
				v.liveVoters = append(v.liveVoters, id)
			}
		}
		slices.Sort(v.voters)
		slices.Sort(v.liveVoters)
	}
	return v
}

// serveHealth answers 200 "ok" when check finds nothing, else 503 with
// one reason per line.
func (n *Node) serveHealth(check func(healthView) []string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		why := check(n.healthOf())
		if len(why) == 0 {
			w.Write([]byte("ok\n"))
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(strings.Join(why, "\n") + "\n"))
	}
}

// alive is /healthz's check.
func alive(v healthView) []string {
	if v.stopping {
		return []string{"the node is stopping"}
	}
	return nil
}
