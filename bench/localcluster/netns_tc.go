package localcluster

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// Link faults short of a full partition, made with tc inside a node's
// namespace on its eth0 (the node's end of its veth pair):
//
//	eth0 egress  (what the node sends)      ─┐  clsact filters, IPv4 only
//	eth0 ingress (what the node receives)   ─┘  (ARP passes, so neighbours stay resolved)
//
//	drop      mirred redirect to bh0, an ifb device that stays down: the packet is gone
//	duplicate mirred mirror back to eth0 (the copy is classified again; mirred's nesting limit ends it)
//	shape     mirred redirect to qout0 / qin0, ifb devices with a tbf queue (rate, bounded latency)
//	          that hand the packet back to eth0 once it leaves the queue
//
// Why not netem: this kernel (and many a CI kernel) is built without
// sch_netem, sch_prio and act_gact (CONFIG_NET_SCH_NETEM is not set). What
// it has — clsact, u32, cls_bpf, act_mirred, ifb, tbf — is enough for
// one-way loss, per-destination loss, random loss (a classic BPF program
// reading the kernel's random number, SKF_AD_RANDOM), duplication, and
// delay with jitter and reordering from a slow, bounded queue that a share
// of the packets bypasses. The delay is a queueing delay: it grows with the
// traffic on the link, up to LinkQuality.Latency (then tbf drops).
//
// Every fault on a node is undone at once by Restore (it deletes eth0's
// clsact qdisc with every filter on it); the helper devices live in the
// namespace and go with it.

// Direction is one direction of a node's link.
type Direction string

const (
	// Outbound: packets the node sends (it can still receive).
	Outbound Direction = "out"
	// Inbound: packets sent to the node (it can still send).
	Inbound Direction = "in"
)

// hook is the clsact hook on eth0 that sees the direction's packets.
func (d Direction) hook() string {
	if d == Inbound {
		return "ingress"
	}
	return "egress"
}

// shaper is the direction's ifb queue device.
func (d Direction) shaper() string {
	if d == Inbound {
		return "qin0"
	}
	return "qout0"
}

// Names of the devices inside a node's namespace.
const (
	nodeDev      = "eth0"
	blackholeDev = "bh0"
)

// LinkQuality describes a degraded link, applied to both directions.
type LinkQuality struct {
	Loss      float64 // share of packets dropped, in [0,1]
	Duplicate float64 // share of packets sent twice (or more: a copy may be copied again)
	// Reorder is the share of packets that skip the queue and so overtake
	// the packets waiting in it.
	Reorder float64
	// RateBits is the queue's rate in bits per second; Latency bounds how
	// long a packet waits in it (beyond that tbf drops). Zero RateBits: no
	// queue (no delay, no reordering).
	RateBits int64
	Latency  time.Duration
}

func (q LinkQuality) String() string {
	s := fmt.Sprintf("loss %.0f%% dup %.0f%% reorder %.0f%%", q.Loss*100, q.Duplicate*100, q.Reorder*100)
	if q.RateBits > 0 {
		s += fmt.Sprintf(" queue %dkbit ≤%v", q.RateBits/1000, q.Latency)
	}
	return s
}

// randomBPF is a classic BPF program for cls_bpf, in tc's "bytecode"
// syntax, that matches a packet with probability p: it loads the kernel's
// per-packet random number (SKF_AD_OFF+SKF_AD_RANDOM) and matches when it
// is at most p·2³².
//
//	ld  [SKF_AD_OFF+SKF_AD_RANDOM]
//	jgt #threshold, nomatch, match
//	nomatch: ret #0
//	match:   ret #-1
func randomBPF(p float64) string {
	thr := uint64(math.Round(min(max(p, 0), 1) * (1 << 32)))
	if thr > math.MaxUint32 {
		thr = math.MaxUint32
	}
	const ldRandom = 0x20 // BPF_LD|BPF_W|BPF_ABS
	const jgtK = 0x25     // BPF_JMP|BPF_JGT|BPF_K
	const retK = 0x06     // BPF_RET|BPF_K
	const adRandom = uint32(0xfffff000) + 56
	return fmt.Sprintf("4,%d 0 0 %d,%d 0 1 %d,%d 0 0 0,%d 0 0 %d", ldRandom, adRandom, jgtK, thr, retK, retK, uint32(math.MaxUint32))
}

// filter is the argv (after "tc -n NS") of one clsact filter on eth0.
func filter(d Direction, prio int, match []string, action ...string) []string {
	args := []string{"filter", "add", "dev", nodeDev, d.hook(), "protocol", "ip", "prio", fmt.Sprint(prio)}
	args = append(args, match...)
	return append(args, action...)
}

var (
	matchAll = []string{"u32", "match", "u32", "0", "0"}
	drop     = []string{"action", "mirred", "egress", "redirect", "dev", blackholeDev}
)

func matchRandom(p float64) []string { return []string{"bpf", "bytecode", randomBPF(p)} }

// oneWayCmds drops every IPv4 packet in direction d.
func oneWayCmds(d Direction) [][]string {
	return [][]string{filter(d, 1, matchAll, drop...)}
}

// cutCmds drops every IPv4 packet between the node and peerIP, both ways.
func cutCmds(peerIP string) [][]string {
	return [][]string{
		filter(Outbound, 1, []string{"u32", "match", "ip", "dst", peerIP + "/32"}, drop...),
		filter(Inbound, 1, []string{"u32", "match", "ip", "src", peerIP + "/32"}, drop...),
	}
}

// degradeCmds applies q to both directions: random loss first, then
// duplication, then the share that bypasses the queue, then the queue.
func degradeCmds(q LinkQuality) [][]string {
	var out [][]string
	for _, d := range []Direction{Outbound, Inbound} {
		mirror := []string{"action", "mirred", d.hook(), "mirror", "dev", nodeDev}
		if q.RateBits > 0 {
			out = append(out, []string{"qdisc", "replace", "dev", d.shaper(), "root", "tbf",
				"rate", fmt.Sprintf("%dbit", q.RateBits), "burst", "5000", "latency", fmt.Sprintf("%dms", max(q.Latency.Milliseconds(), 1))})
		}
		if q.Loss > 0 {
			out = append(out, filter(d, 1, matchRandom(q.Loss), drop...))
		}
		if q.Duplicate > 0 {
			out = append(out, filter(d, 2, matchRandom(q.Duplicate), mirror...))
		}
		if q.RateBits > 0 {
			if q.Reorder > 0 {
				out = append(out, filter(d, 3, matchRandom(q.Reorder))) // matched, no action: passes now
			}
			out = append(out, filter(d, 4, matchAll, "action", "mirred", "egress", "redirect", "dev", d.shaper()))
		}
	}
	return out
}

// TCAvailable returns nil when link faults can be made here: namespaces
// work (NetNSAvailable) and the tc command exists.
func TCAvailable() error {
	if err := NetNSAvailable(); err != nil {
		return err
	}
	if _, err := exec.LookPath("tc"); err != nil {
		return fmt.Errorf("localcluster: link faults need the iproute2 `tc` command: %w", err)
	}
	return nil
}

// OneWay drops every IPv4 packet node id sends (Outbound) or is sent
// (Inbound) until Restore. The process keeps running.
func (n *NetNS) OneWay(ctx context.Context, id int32, d Direction) error {
	if d != Outbound && d != Inbound {
		return fmt.Errorf("localcluster: unknown direction %q", d)
	}
	return n.impair(ctx, id, oneWayCmds(d))
}

// Cut drops every packet between nodes a and b, both ways, until
// Restore(a); both still reach every other node and the clients (a
// "bridge" partition: the third node sees both sides).
func (n *NetNS) Cut(ctx context.Context, a, b int32) error {
	if a == b {
		return fmt.Errorf("localcluster: cannot cut node %d from itself", a)
	}
	return n.impair(ctx, a, cutCmds(n.IP(b)))
}

// Degrade makes node id's link lossy, duplicating, slow and reordering, both
// ways, until Restore.
func (n *NetNS) Degrade(ctx context.Context, id int32, q LinkQuality) error {
	return n.impair(ctx, id, degradeCmds(q))
}

// impair installs cmds on node id's eth0 (after removing any earlier fault).
// On error the node is restored.
func (n *NetNS) impair(ctx context.Context, id int32, cmds [][]string) error {
	n.mu.Lock()
	created := n.mu.created[id]
	n.mu.Unlock()
	if !created {
		return fmt.Errorf("localcluster: node %d has no namespace yet", id)
	}
	if err := n.helperDevices(ctx, id); err != nil {
		return err
	}
	if err := n.Restore(ctx, id); err != nil {
		return err
	}
	n.mu.Lock()
	n.mu.impaired[id] = true // from here on Restore must undo it
	n.mu.Unlock()
	ns := n.Namespace(id)
	all := append([][]string{{"qdisc", "add", "dev", nodeDev, "clsact"}}, cmds...)
	for _, c := range all {
		if err := runTC(ctx, ns, c...); err != nil {
			return errors.Join(err, n.Restore(context.WithoutCancel(ctx), id))
		}
	}
	return nil
}

// helperDevices creates bh0 (down), qin0 and qout0 (up) in node id's
// namespace, once.
func (n *NetNS) helperDevices(ctx context.Context, id int32) error {
	n.mu.Lock()
	done := n.mu.helpers[id]
	n.mu.Unlock()
	if done {
		return nil
	}
	ns := n.Namespace(id)
	steps := [][]string{
		{"-n", ns, "link", "add", blackholeDev, "type", "ifb"},
		{"-n", ns, "link", "add", Inbound.shaper(), "type", "ifb"},
		{"-n", ns, "link", "add", Outbound.shaper(), "type", "ifb"},
		{"-n", ns, "link", "set", Inbound.shaper(), "up"},
		{"-n", ns, "link", "set", Outbound.shaper(), "up"},
	}
	for _, s := range steps {
		if err := runIP(ctx, s...); err != nil && !strings.Contains(err.Error(), "File exists") {
			return err
		}
	}
	n.mu.Lock()
	n.mu.helpers[id] = true
	n.mu.Unlock()
	return nil
}

// Restore undoes every link fault on node id (OneWay, Cut, Degrade). It is
// idempotent.
func (n *NetNS) Restore(ctx context.Context, id int32) error {
	n.mu.Lock()
	impaired := n.mu.impaired[id]
	n.mu.Unlock()
	if !impaired {
		return nil
	}
	err := runTC(ctx, n.Namespace(id), "qdisc", "del", "dev", nodeDev, "clsact")
	if err != nil && isNoQdisc(err) {
		err = nil
	}
	if err != nil {
		return err
	}
	n.mu.Lock()
	delete(n.mu.impaired, id)
	n.mu.Unlock()
	return nil
}

// Impaired lists the nodes with a link fault in place, in order.
func (n *NetNS) Impaired() []int32 {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []int32
	for id := range n.mu.impaired {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// isNoQdisc reports whether tc failed because there was nothing to delete.
func isNoQdisc(err error) bool {
	s := err.Error()
	return strings.Contains(s, "Invalid handle") || strings.Contains(s, "Cannot find") || strings.Contains(s, "No such file")
}

// runTC runs `tc -n ns args...` and returns its output in the error.
func runTC(ctx context.Context, ns string, args ...string) error {
	full := append([]string{"-n", ns}, args...)
	out, err := exec.CommandContext(ctx, "tc", full...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("localcluster: tc %s: %w: %s", strings.Join(full, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
