package bench

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"paymentlog/client"
)

// TestFailoverNoFigureWithoutReadback: when the read-back did not happen
// (it failed, or the run was cancelled first), the trials' live figures —
// the first partition 0 acknowledgement after the new leader showed up,
// which may be the dead victim's late answer — are not the unavailability
// the report defines; they must not meet a target.
func TestFailoverNoFigureWithoutReadback(t *testing.T) {
	res := &FailoverResult{Acked: 100, Unverified: 100}
	for i := range 3 {
		res.Trials = append(res.Trials, FailoverTrial{Trial: i + 1, FenceMs: 50, NewLeaderMs: 60, UnavailableMs: 80, RejoinMs: 500, killAt: time.Unix(int64(i), 0)})
	}
	res.unmeasured()
	res.summarize()
	if u := res.UnavailableMs; u.N != 0 || u.Missing != 3 {
		t.Fatalf("unavailability %+v", u)
	}
	rep := Report{Failover: res}
	rep.checkTargets(Config{})
	for _, tg := range rep.Targets {
		if strings.Contains(tg.Name, "unavailability") && tg.Met {
			t.Errorf("%s met without a read-back", tg.Name)
		}
	}
}

// TestFailoverVerifyFailureDropsLiveFigures: verify itself drops them when
// the read-back fails (here: the context is already cancelled).
func TestFailoverVerifyFailureDropsLiveFigures(t *testing.T) {
	r := &runner{target: &externalTarget{addrs: []string{"127.0.0.1:1"}}, log: slog.New(slog.DiscardHandler)}
	res := &FailoverResult{Topic: "t", timeline: &ackTimeline{}}
	res.timeline.add(client.Delivery{Partition: 0, Offset: 0}, recordID{seq: 1}, time.Unix(2, 0))
	res.Trials = []FailoverTrial{{Trial: 1, UnavailableMs: 80, killAt: time.Unix(1, 0)}}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := r.verify(ctx, "t", res); err == nil {
		t.Fatal("verify succeeded with a cancelled context")
	}
	if res.Unverified != 1 || res.Trials[0].UnavailableMs != -1 {
		t.Fatalf("unverified %d, trial unavailable %v ms", res.Unverified, res.Trials[0].UnavailableMs)
	}
}
