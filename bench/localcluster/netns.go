package localcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// NetNS puts every node of a local cluster in its own Linux network
// namespace, joined by a veth pair to one bridge in the caller's namespace,
// so that a node can be cut off from every other node and from the clients
// (Isolate: its bridge-side link goes down) and reconnected later (Heal),
// or have its link made one-way, cut from one peer, or degraded (OneWay,
// Cut, Degrade; undone by Restore; see netns_tc.go).
// It needs root and the iproute2 `ip` command; NetNSAvailable says why not.
//
//	caller's namespace                 node namespaces
//	  bridge <tag>br 10.A.B.254/24 ──┬── <tag>v1 ═ eth0 10.A.B.1  (<tag>n1)
//	                                 ├── <tag>v2 ═ eth0 10.A.B.2  (<tag>n2)
//	                                 └── <tag>v3 ═ eth0 10.A.B.3  (<tag>n3)
//
// The test process stays in its own namespace and reaches every node through
// the bridge, so clients and the Cluster's metadata helpers work unchanged.
//
// Lifecycle: NewNetNS creates the bridge; Apply sets the Options hooks (Addr,
// Command, BeforeStart) before Start; each node's namespace and veth pair are
// created on its first start; Close (after Cluster.Close) deletes every
// namespace and the bridge. Names carry a random tag, so concurrent runs do
// not collide; CleanupStaleNetNS removes leftovers of crashed runs.
type NetNS struct {
	tag    string
	owner  *tagOwner // held from NewNetNS to Close (netns_owner.go)
	bridge string
	prefix string // "10.A.B."
	port   int

	mu struct {
		sync.Mutex
		created  map[int32]bool
		isolated map[int32]bool
		impaired map[int32]bool // a tc link fault is in place (netns_tc.go)
		helpers  map[int32]bool // the tc helper devices exist (netns_tc.go)
		closed   bool
	}
}

// netnsTagPrefix starts every name NetNS creates.
const netnsTagPrefix = "plc"

// NetNSPort is the UDP port every node listens on inside its namespace.
const NetNSPort = 7100

// NetNSAvailable returns nil when network namespaces can be used here, else
// an error saying why not (not root, no `ip` command, or creating one failed).
func NetNSAvailable() error {
	if os.Geteuid() != 0 {
		return errors.New("localcluster: network namespaces need root (running as uid " + fmt.Sprint(os.Geteuid()) + ")")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("localcluster: network namespaces need the iproute2 `ip` command: %w", err)
	}
	return nil
}

// NewNetNS creates the bridge on a free 10.x.y.0/24 subnet.
func NewNetNS(ctx context.Context) (*NetNS, error) {
	if err := NetNSAvailable(); err != nil {
		return nil, err
	}
	n := &NetNS{port: NetNSPort}
	for range 100 {
		tag := fmt.Sprintf("%s%04x", netnsTagPrefix, rand.IntN(1<<16))
		o, err := claimTag(tag)
		if errors.Is(err, errTagTaken) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("localcluster: claim netns tag: %w", err)
		}
		n.tag, n.owner = tag, o
		break
	}
	if n.owner == nil {
		return nil, errors.New("localcluster: no free netns tag")
	}
	n.bridge = n.tag + "br"
	n.mu.created = map[int32]bool{}
	n.mu.isolated = map[int32]bool{}
	n.mu.impaired = map[int32]bool{}
	n.mu.helpers = map[int32]bool{}
	used, err := usedIPv4Subnets(ctx)
	if err != nil {
		n.owner.release()
		return nil, err
	}
	for range 100 {
		p := fmt.Sprintf("10.%d.%d.", 100+rand.IntN(150), rand.IntN(250))
		if !used[p] {
			n.prefix = p
			break
		}
	}
	if n.prefix == "" {
		n.owner.release()
		return nil, errors.New("localcluster: no free 10.x.y.0/24 subnet for the bridge")
	}
	steps := [][]string{
		{"link", "add", n.bridge, "type", "bridge"},
		{"addr", "add", n.prefix + "254/24", "dev", n.bridge},
		{"link", "set", n.bridge, "up"},
	}
	for _, s := range steps {
		if err := runIP(ctx, s...); err != nil {
			n.Close()
			return nil, err
		}
	}
	return n, nil
}

// usedIPv4Subnets returns the "a.b.c." prefixes of every IPv4 address here.
func usedIPv4Subnets(ctx context.Context) (map[string]bool, error) {
	out, err := exec.CommandContext(ctx, "ip", "-o", "-4", "addr", "show").Output()
	if err != nil {
		return nil, fmt.Errorf("localcluster: ip addr show: %w", err)
	}
	used := map[string]bool{}
	for _, f := range strings.Fields(string(out)) {
		ip, _, err := net.ParseCIDR(f)
		if err != nil || ip.To4() == nil {
			continue
		}
		v := ip.To4()
		used[fmt.Sprintf("%d.%d.%d.", v[0], v[1], v[2])] = true
	}
	return used, nil
}

// Namespace is node id's namespace name.
func (n *NetNS) Namespace(id int32) string { return fmt.Sprintf("%sn%d", n.tag, id) }

// link is node id's bridge-side veth name.
func (n *NetNS) link(id int32) string { return fmt.Sprintf("%sv%d", n.tag, id) }

// IP is node id's address inside its namespace.
func (n *NetNS) IP(id int32) string { return fmt.Sprintf("%s%d", n.prefix, id) }

// Addr is node id's listen address (host:port).
func (n *NetNS) Addr(id int32) string { return net.JoinHostPort(n.IP(id), fmt.Sprint(n.port)) }

// metricsPort is every node's TCP port for --metrics-addr in its own
// namespace (no other process listens there).
const metricsPort = 9464

// MetricsAddr is node id's --metrics-addr: its namespace's address, which
// this process reaches over the bridge as it does the node's QUIC one.
func (n *NetNS) MetricsAddr(id int32) string {
	return net.JoinHostPort(n.IP(id), fmt.Sprint(metricsPort))
}

// Apply sets opts.Addr, opts.MetricsAddr, opts.Command and opts.BeforeStart
// so that each node runs inside its namespace (an existing BeforeStart still
// runs, afterwards).
func (n *NetNS) Apply(opts *Options) {
	opts.Addr = n.Addr
	opts.MetricsAddr = n.MetricsAddr
	opts.Command = func(id int32, argv []string) []string {
		return append([]string{"ip", "netns", "exec", n.Namespace(id)}, argv...)
	}
	prev := opts.BeforeStart
	opts.BeforeStart = func(ctx context.Context, id int32) error {
		if err := n.ensure(ctx, id); err != nil {
			return err
		}
		if prev != nil {
			return prev(ctx, id)
		}
		return nil
	}
}

// ensure creates node id's namespace and veth pair once.
func (n *NetNS) ensure(ctx context.Context, id int32) error {
	n.mu.Lock()
	done, closed := n.mu.created[id], n.mu.closed
	n.mu.Unlock()
	if closed {
		return errors.New("localcluster: netns closed")
	}
	if done {
		return nil
	}
	ns, link, peer := n.Namespace(id), n.link(id), n.link(id)+"p"
	steps := [][]string{
		{"netns", "add", ns},
		{"-n", ns, "link", "set", "lo", "up"},
		{"link", "add", link, "type", "veth", "peer", "name", peer},
		{"link", "set", peer, "netns", ns},
		{"-n", ns, "link", "set", peer, "name", "eth0"},
		{"-n", ns, "addr", "add", n.IP(id) + "/24", "dev", "eth0"},
		{"-n", ns, "link", "set", "eth0", "up"},
		{"link", "set", link, "master", n.bridge},
		{"link", "set", link, "up"},
	}
	for _, s := range steps {
		if err := runIP(ctx, s...); err != nil {
			return err
		}
	}
	n.mu.Lock()
	n.mu.created[id] = true
	n.mu.Unlock()
	return nil
}

// Isolate cuts node id off from everyone: its bridge-side link goes down, so
// every packet to or from it is dropped. The process keeps running.
func (n *NetNS) Isolate(ctx context.Context, id int32) error {
	if err := runIP(ctx, "link", "set", n.link(id), "down"); err != nil {
		return err
	}
	n.mu.Lock()
	n.mu.isolated[id] = true
	n.mu.Unlock()
	return nil
}

// Heal reconnects an isolated node.
func (n *NetNS) Heal(ctx context.Context, id int32) error {
	if err := runIP(ctx, "link", "set", n.link(id), "up"); err != nil {
		return err
	}
	n.mu.Lock()
	delete(n.mu.isolated, id)
	n.mu.Unlock()
	return nil
}

// Isolated lists the nodes currently cut off.
func (n *NetNS) Isolated() []int32 {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []int32
	for id := range n.mu.isolated {
		out = append(out, id)
	}
	return out
}

// Close deletes every namespace (with its veth pair) and the bridge. Call it
// after Cluster.Close. It is idempotent and returns the first error.
func (n *NetNS) Close() error {
	n.mu.Lock()
	if n.mu.closed {
		n.mu.Unlock()
		return nil
	}
	n.mu.closed = true
	var ids []int32
	for id := range n.mu.created {
		ids = append(ids, id)
	}
	n.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var errs []error
	for _, id := range ids {
		if err := runIP(ctx, "link", "del", n.link(id)); err != nil && !strings.Contains(err.Error(), "Cannot find device") {
			errs = append(errs, err)
		}
		if err := runIP(ctx, "netns", "del", n.Namespace(id)); err != nil {
			errs = append(errs, err)
		}
	}
	if err := runIP(ctx, "link", "del", n.bridge); err != nil && !strings.Contains(err.Error(), "Cannot find device") {
		errs = append(errs, err)
	}
	n.owner.release() // last: until here a cleanup must leave the tag alone
	return errors.Join(errs...)
}

// staleNetNSAge is how old an empty namespace without an owner lock file
// must be for CleanupStaleNetNS (a variable for tests).
var staleNetNSAge = 10 * time.Minute

// CleanupStaleNetNS deletes namespaces and links that a NetNS of a crashed
// run left behind (names starting with "plc" followed by a 4-digit hex tag)
// whose namespace holds no process. A tag whose owner lock a live run holds
// is left alone, even while its nodes are down; a tag with no lock file (an
// older build's run) only once its namespace is 10 minutes old. It returns
// what it removed.
func CleanupStaleNetNS(ctx context.Context) ([]string, error) {
	if err := NetNSAvailable(); err != nil {
		return nil, err
	}
	out, err := exec.CommandContext(ctx, "ip", "netns", "list").Output()
	if err != nil {
		return nil, fmt.Errorf("localcluster: ip netns list: %w", err)
	}
	var removed []string
	tags := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !isNetNSName(f[0]) {
			continue
		}
		tag := f[0][:len(netnsTagPrefix)+4]
		owned, known := tagOwnership(tag)
		if owned {
			continue
		}
		pids, _ := exec.CommandContext(ctx, "ip", "netns", "pids", f[0]).Output()
		if len(bytes.TrimSpace(pids)) > 0 {
			continue
		}
		// Without a lock file, a concurrent run of an older build may have
		// made it a moment ago and not started its node yet.
		if st, err := os.Stat("/run/netns/" + f[0]); !known && err == nil && time.Since(st.ModTime()) < staleNetNSAge {
			continue
		}
		if err := runIP(ctx, "netns", "del", f[0]); err == nil {
			removed = append(removed, f[0])
			tags[tag] = true
		}
	}
	for tag := range tags {
		if err := runIP(ctx, "link", "del", tag+"br"); err == nil {
			removed = append(removed, tag+"br")
		}
		forgetTag(tag)
	}
	return removed, nil
}

func isNetNSName(s string) bool {
	if !strings.HasPrefix(s, netnsTagPrefix) || len(s) < len(netnsTagPrefix)+6 {
		return false
	}
	for _, c := range s[len(netnsTagPrefix) : len(netnsTagPrefix)+4] {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return s[len(netnsTagPrefix)+4] == 'n'
}

// runIP runs `ip args...` and returns its output in the error.
func runIP(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("localcluster: ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
