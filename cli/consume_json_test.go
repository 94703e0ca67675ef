package cli

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzAppendJSONBytes: the output is always valid JSON; for valid UTF-8
// input it decodes back to exactly the input.
func FuzzAppendJSONBytes(f *testing.F) {
	for _, s := range []string{"", "plain", `"q"\`, "\x00\x1f\t\n\r", "\xff\xfe", "ünï\u2028\u2029😀", "a\xc3"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, valid := appendJSONBytes(nil, in)
		if valid != utf8.Valid(in) {
			t.Fatalf("valid=%v for %q", valid, in)
		}
		var s string
		if err := json.Unmarshal(out, &s); err != nil {
			t.Fatalf("%q -> %s: %v", in, out, err)
		}
		if valid && s != string(in) {
			t.Fatalf("%q -> %s -> %q", in, out, s)
		}
	})
}

func TestPlain8MatchesTable(t *testing.T) {
	for c := 0; c < 256; c++ {
		for pos := 0; pos < 8; pos++ {
			var b [8]byte
			for i := range b {
				b[i] = 'a'
			}
			b[pos] = byte(c)
			x := uint64(0)
			for i := 7; i >= 0; i-- {
				x = x<<8 | uint64(b[i])
			}
			if got := plain8(x); got != jsonPlain[c] {
				t.Fatalf("byte %#x at %d: plain8=%v table=%v", c, pos, got, jsonPlain[c])
			}
		}
	}
}
