package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// QUICLoss is what the local nodes' QUIC loss detection saw during a phase
// (from their /metrics): packets sent and declared lost, over every
// connection of every node. The kernel's UDP counters miss most of these:
// quic-go drops an arriving packet itself when 256 already wait for one
// connection.
type QUICLoss struct {
	PacketsSent uint64  `json:"packets_sent"`
	PacketsLost uint64  `json:"packets_lost"`
	LostPercent float64 `json:"lost_percent"`
}

// quicCounters sums the nodes' QUIC packet counters; nil without metrics
// addresses, and nil with the error when a node's cannot be read.
func quicCounters(ctx context.Context, addrs map[int32]string) (*QUICLoss, error) {
	if len(addrs) == 0 {
		return nil, nil
	}
	var sum QUICLoss
	for _, a := range addrs {
		sent, lost, err := scrapeQUIC(ctx, a)
		if err != nil {
			return nil, err
		}
		sum.PacketsSent += sent
		sum.PacketsLost += lost
	}
	return &sum, nil
}

// since is the loss between an earlier reading and this one (nil if either
// is missing).
func (q *QUICLoss) since(before *QUICLoss) *QUICLoss {
	if q == nil || before == nil || q.PacketsSent < before.PacketsSent {
		return nil
	}
	d := &QUICLoss{PacketsSent: q.PacketsSent - before.PacketsSent}
	if q.PacketsLost >= before.PacketsLost {
		d.PacketsLost = q.PacketsLost - before.PacketsLost
	}
	if d.PacketsSent > 0 {
		d.LostPercent = 100 * float64(d.PacketsLost) / float64(d.PacketsSent)
	}
	return d
}

func scrapeQUIC(ctx context.Context, addr string) (sent, lost uint64, err error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return 0, 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	found := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		var dst *uint64
		switch name {
		case "paymentlog_quic_packets_sent_total":
			dst = &sent
		case "paymentlog_quic_packets_lost_total":
			dst = &lost
		default:
			continue
		}
		if *dst, err = strconv.ParseUint(val, 10, 64); err != nil {
			return 0, 0, fmt.Errorf("bench: %s from %s: %w", name, addr, err)
		}
		found++
	}
	if err := sc.Err(); err != nil {
		return 0, 0, err
	}
	if found != 2 {
		return 0, 0, fmt.Errorf("bench: %s/metrics has no QUIC packet counters", addr)
	}
	return sent, lost, nil
}

// quicLossLine writes one phase's QUIC loss, if it was measured.
func quicLossLine(w io.Writer, phase string, q *QUICLoss) {
	if q == nil {
		return
	}
	fmt.Fprintf(w, "  QUIC packets lost (%s)\t%d of %d sent by the nodes (%.2f%%)\n", phase, q.PacketsLost, q.PacketsSent, q.LostPercent)
}
