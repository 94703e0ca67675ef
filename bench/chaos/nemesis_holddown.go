package chaos

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"time"
)

// A node whose disk stalls again within 10 minutes of the previous stall's
// end stays aside after it for a hold-down (node/diskstall_holddown.go):
// 30 s, doubling at each further relapse up to 10 min, during which it
// holds its heartbeats back and the cluster is not ready. A second disk
// stall on the same node in a run would then outlast the nemesis's wait
// for a ready cluster (ReadyTimeout) by design. So when that wait fails,
// the nemesis reads the nodes' /readyz (served when the cluster runs with
// metrics addresses, as a run with disk stalls does): a node that names a
// disk-stall hold-down ("... (until 12:00:35)") is waited for until then
// plus ReadyTimeout, and the event says "held aside by a disk-stall
// hold-down until ..." instead of "not ready".

// holdDownReason matches a node's /readyz line for a disk-stall hold-down
// and captures its end, a UTC time of day.
var holdDownReason = regexp.MustCompile(`disk stall hold-down: .*\(until (\d{2}:\d{2}:\d{2})\)`)

// holdDownUntil reads the end of a disk-stall hold-down from a node's
// /readyz body: the instant at that UTC time of day nearest now (a
// hold-down lasts 10 minutes at most, so across midnight too); false when
// the body names none.
func holdDownUntil(body string, now time.Time) (time.Time, bool) {
	m := holdDownReason.FindStringSubmatch(body)
	if m == nil {
		return time.Time{}, false
	}
	tod, err := time.Parse(time.TimeOnly, m[1])
	if err != nil {
		return time.Time{}, false
	}
	now = now.UTC()
	y, mo, d := now.Date()
	at := time.Date(y, mo, d, tod.Hour(), tod.Minute(), tod.Second(), 0, time.UTC)
	for _, c := range []time.Time{at.AddDate(0, 0, -1), at.AddDate(0, 0, 1)} {
		if c.Sub(now).Abs() < at.Sub(now).Abs() {
			at = c
		}
	}
	return at, true
}

// readyzAddrs maps the running nodes that serve /readyz to its address.
func (n *Nemesis) readyzAddrs() map[int32]string {
	addrs := map[int32]string{}
	for _, id := range n.C.IDs() {
		if info := n.C.Node(id); info.Running && info.MetricsAddr != "" {
			addrs[id] = info.MetricsAddr
		}
	}
	return addrs
}

// heldUntil is the latest end of a disk-stall hold-down the /readyz at
// addrs (by node) name, and the node it holds aside; zero when none names
// one.
func heldUntil(ctx context.Context, addrs map[int32]string) (until time.Time, node int32) {
	for id, addr := range addrs {
		if t, ok := holdDownUntil(readyz(ctx, addr), time.Now()); ok && t.After(until) {
			until, node = t, id
		}
	}
	return until, node
}

// readyz is the body of the /readyz at addr ("" when it does not answer).
func readyz(ctx context.Context, addr string) string {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/readyz", nil)
	if err != nil {
		return ""
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return string(b)
}

// waitReadyAfterFault waits for a ready cluster after a fault (see
// waitReady), and, when a node is still held aside by a disk-stall
// hold-down at the end of that wait, until the hold-down's end plus
// ReadyTimeout; it returns the event's note about the wait ("" for a ready
// cluster within ReadyTimeout).
func (n *Nemesis) waitReadyAfterFault(ctx context.Context, rots bool) string {
	err := n.waitReady(ctx, rots)
	if err == nil {
		return ""
	}
	until, held := heldUntil(ctx, n.readyzAddrs())
	if held == 0 {
		return fmt.Sprintf("not ready %v after the fault: %v", n.ReadyTimeout, err)
	}
	note := fmt.Sprintf("node %d held aside by a disk-stall hold-down until %s", held, until.Format(time.TimeOnly))
	if err := n.waitReadyWithin(ctx, rots, time.Until(until)+n.ReadyTimeout); err != nil {
		note += fmt.Sprintf("; not ready %v after the hold-down: %v", n.ReadyTimeout, err)
	}
	return note
}
