package bench

import (
	"strings"
	"testing"
)

// The controllers' fence counters are read by cause, and a trial's cause
// is the one that rose while it ran.
func TestFencedBy(t *testing.T) {
	text := "paymentlog_quic_packets_sent_total 10\npaymentlog_quic_packets_lost_total 0\n" +
		"# TYPE paymentlog_controller_broker_fences_total counter\n" +
		`paymentlog_controller_broker_fences_total{cause="session"} 2` + "\n" +
		`paymentlog_controller_broker_fences_total{cause="port_closed"} 5` + "\n" +
		`paymentlog_controller_broker_fences_total{cause="deaf"} 0` + "\n" +
		"# TYPE paymentlog_controller_port_closed_fences_total counter\n" +
		`paymentlog_controller_port_closed_fences_total{found_by="probe"} 1` + "\n" +
		`paymentlog_controller_port_closed_fences_total{found_by="traffic"} 4` + "\n" +
		`paymentlog_controller_port_closed_fences_total{found_by="raft"} 0` + "\n"
	c, err := parseNodeMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if c.fences["session"] != 2 || c.fences["port_closed"] != 5 || c.fences["deaf"] != 0 {
		t.Fatalf("fences %v", c.fences)
	}
	if c.portFoundBy["probe"] != 1 || c.portFoundBy["traffic"] != 4 || c.portFoundBy["raft"] != 0 || len(c.portFoundBy) != 3 {
		t.Fatalf("port_closed fences by finder %v", c.portFoundBy)
	}
	before := map[string]uint64{"session": 2, "port_closed": 5}
	for _, tc := range []struct {
		after map[string]uint64
		want  string
	}{
		{map[string]uint64{"session": 2, "port_closed": 6}, "port_closed"},
		{map[string]uint64{"session": 3, "port_closed": 5}, "session"},
		{map[string]uint64{"session": 3, "port_closed": 6}, ""}, // two rose: cannot tell
		{map[string]uint64{"session": 2, "port_closed": 5}, ""},
		{map[string]uint64{"session": 2, "port_closed": 5, "deaf": 1}, "deaf"},
		{nil, ""},
	} {
		if got := fencedBy(before, tc.after); got != tc.want {
			t.Errorf("fencedBy(%v, %v) = %q; want %q", before, tc.after, got, tc.want)
		}
	}
	if got := fencedBy(nil, before); got != "" {
		t.Errorf("fencedBy without a count before = %q", got)
	}

	trials := []FailoverTrial{{FencedBy: "port_closed", PortFoundBy: "traffic"}, {FencedBy: "port_closed", PortFoundBy: "probe"},
		{FencedBy: "port_closed", PortFoundBy: "traffic"}, {FencedBy: "session"}, {}}
	line := fencedByLine(trials)
	for _, want := range []string{"its port found closed (the process was gone; --port-probe-after) in 3 (by the controller's own traffic in 2, its probe in 1)",
		"session running out (--session-timeout) in 1", "not known in 1"} {
		if !strings.Contains(line, want) {
			t.Errorf("fenced by line %q lacks %q", line, want)
		}
	}
	if fencedByLine([]FailoverTrial{{}, {}}) != "" {
		t.Error("a line for trials that know nothing")
	}
}
