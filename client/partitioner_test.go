package client

import "testing"

// Vectors from Kafka's UtilsTest.testMurmur2.
func TestMurmur2MatchesKafka(t *testing.T) {
	cases := map[string]int32{
		"21":                         -973932308,
		"foobar":                     -790332482,
		"a-little-bit-long-string":   -985981536,
		"a-little-bit-longer-string": -1486304829,
		"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
		"abc": 479470107,
	}
	for in, want := range cases {
		if got := Murmur2([]byte(in)); got != want {
			t.Errorf("Murmur2(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestKeyPartitionStable(t *testing.T) {
	for _, k := range []string{"", "a", "customer-42", "ünïcode"} {
		p := KeyPartition([]byte(k), 7)
		if p < 0 || p >= 7 {
			t.Fatalf("KeyPartition(%q) = %d", k, p)
		}
		if KeyPartition([]byte(k), 7) != p {
			t.Fatalf("not stable")
		}
	}
}

func TestStickyMovesAfterBatchBytes(t *testing.T) {
	s := newSticky(100)
	first := s.pick("t", 60, 3)
	if s.pick("t", 30, 3) != first {
		t.Fatal("moved before the batch was full")
	}
	second := s.pick("t", 30, 3)
	if second != (first+1)%3 {
		t.Fatalf("after a full batch got %d, want %d", second, (first+1)%3)
	}
}
