package chaos

import "testing"

// The members' reads must cover every final log below the HW: a hole
// below what they read is member-skipped, a tail never read is
// members-behind, a different value inconsistent-offset; reading records
// twice (a handover resuming at the last commit) is fine.
func TestCheckMembers(t *testing.T) {
	log := PartitionLog{Partition: 0, HW: 5, Records: []LogRecord{{Offset: 0, Value: "a"}, {Offset: 1, Value: "b"}, {Offset: 2, Value: "c"}, {Offset: 3, Value: "d"}, {Offset: 4, Value: "e"}, {Offset: 5, Value: "f"}}}
	reads := func(offs ...int64) []MemberRead {
		var out []MemberRead
		for i, o := range offs {
			out = append(out, MemberRead{Member: i % 2, Partition: 0, Offset: o, Value: log.Records[o].Value})
		}
		return out
	}
	for _, c := range []struct {
		name  string
		reads []MemberRead
		want  map[AnomalyKind]int
	}{
		{"all, some twice", reads(0, 1, 2, 1, 2, 3, 4), nil},
		{"a hole", reads(0, 1, 3, 4), map[AnomalyKind]int{MemberSkipped: 1}},
		{"a tail", reads(0, 1, 2), map[AnomalyKind]int{MembersBehind: 1}},
		{"another value", append(reads(0, 1, 2, 3), MemberRead{Partition: 0, Offset: 4, Value: "x"}), map[AnomalyKind]int{InconsistentOffset: 1}},
	} {
		r := &Report{Counts: map[AnomalyKind]int{}}
		checkMembers(&History{Members: 2, MemberReads: c.reads, Final: []PartitionLog{log}}, r, nil)
		for _, k := range append(append([]AnomalyKind(nil), SafetyKinds...), LivenessKinds...) {
			if r.Counts[k] != c.want[k] {
				t.Errorf("%s: %s %d, want %d (%v)", c.name, k, r.Counts[k], c.want[k], r.Anomalies)
			}
		}
	}
}
