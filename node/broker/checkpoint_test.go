package broker

import (
	"bytes"
	"reflect"
	"testing"
)

func TestCheckpointRoundTrip(t *testing.T) {
	in := map[tp]int64{{"payments", 0}: 17, {"payments", 2}: 0, {"audit.log", 11}: 1 << 40}
	data := encodeCheckpoint(in)
	want := "0\n3\naudit.log 11 1099511627776\npayments 0 17\npayments 2 0\n"
	if string(data) != want {
		t.Fatalf("encoded:\n%s\nwant:\n%s", data, want)
	}
	out, err := decodeCheckpoint(data)
	if err != nil || !reflect.DeepEqual(in, out) {
		t.Fatalf("decoded %v, %v", out, err)
	}
}

func TestCheckpointRejectsGarbage(t *testing.T) {
	for _, s := range []string{"", "1\n0\n", "0\n2\np 0 1\n", "0\nx\n", "0\n1\np -1 3\n", "0\n1\np 0\n"} {
		if _, err := decodeCheckpoint([]byte(s)); err == nil {
			t.Errorf("%q: no error", s)
		}
	}
}

func FuzzCheckpoint(f *testing.F) {
	f.Add([]byte("0\n1\npayments 0 17\n"))
	f.Add([]byte("0\n0\n"))
	f.Add([]byte("0\n99999999999\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := decodeCheckpoint(data)
		if err != nil {
			return
		}
		again, err := decodeCheckpoint(encodeCheckpoint(m))
		if err != nil || !reflect.DeepEqual(m, again) {
			t.Fatalf("re-encoding %q: %v %v", data, again, err)
		}
		_ = bytes.Clone(data)
	})
}
