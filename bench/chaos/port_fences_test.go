package chaos

import (
	"strings"
	"testing"
)

// livePortFences flags a port fence only when the fenced incarnation's
// process logged afterwards that a heartbeat answer found it fenced.
func TestLivePortFences(t *testing.T) {
	const fence = `msg="broker silent and its port found closed (its process is gone); fencing before its session runs out" node=%s component=controller broker=%s incarnation=%s addr=10.0.0.%s:7100 silent=80ms found_by=probe`
	line := func(at, msg string) string { return "time=2026-12-05T03:00:" + at + "Z level=INFO " + msg + "\n" }
	fenceLine := func(at, by, broker, inc string) string {
		return line(at, fmtFence(fence, by, broker, inc))
	}
	logs := map[int32][]byte{
		// Node 1, the controller: fences 2's incarnation 20 (killed: it
		// logs nothing more), 3's incarnation 30 (paused: it hears of it
		// later), and 2's incarnation 21 (it started again in its process
		// before: incarnation 22 hears of its own fence, not 21's).
		1: []byte("### localcluster 2026-12-05T03:00:00Z: start #1\n" +
			line("00.100", `msg="node started" node=1 incarnation=10`) +
			fenceLine("01.000", "1", "2", "20") +
			fenceLine("02.000", "1", "3", "30") +
			fenceLine("03.000", "1", "3", "30") + // the same fence, logged again
			fenceLine("04.000", "1", "2", "21")),
		2: []byte("### localcluster 2026-12-05T03:00:00Z: start #1\n" +
			line("00.200", `msg="node started" node=2 incarnation=20`) +
			line("00.900", `msg="fence state changed" node=2 fenced=true`) + // before its fence: a session's
			"### localcluster 2026-12-05T03:00:02Z: start #2\n" +
			line("02.500", `msg="node started" node=2 incarnation=21`) +
			line("03.900", `msg="node started" node=2 incarnation=22`) +
			line("04.100", `msg="fence state changed" node=2 fenced=true`)),
		3: []byte("### localcluster 2026-12-05T03:00:00Z: start #1\n" +
			line("00.300", `msg="node started" node=3 incarnation=30`) +
			line("04.200", `msg="fence state changed" node=3 fenced=false`) +
			line("04.300", `msg="fence state changed" node=3 fenced=true`)),
	}
	got := livePortFences(logs)
	if len(got) != 1 {
		t.Fatalf("%d live port fences, want 1: %v", len(got), got)
	}
	f := got[0]
	if f.By != 1 || f.Broker != 3 || f.Incarnation != 30 || f.At.Format("05.000") != "02.000" || f.Alive.Format("05.000") != "04.300" {
		t.Fatalf("got %v", f)
	}
	if s := f.String(); !strings.Contains(s, "broker 3 (incarnation 30)") || !strings.Contains(s, "2.3s later") {
		t.Fatalf("described as %q", s)
	}
}

func fmtFence(format, by, broker, inc string) string {
	return strings.NewReplacer("node=%s", "node="+by, "broker=%s", "broker="+broker, "incarnation=%s", "incarnation="+inc, "10.0.0.%s", "10.0.0."+broker).Replace(format)
}
