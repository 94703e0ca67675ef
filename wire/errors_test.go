package wire

import (
	"strings"
	"testing"
)

// Every code up to the last one has a name (String, hence error messages,
// CLI output and metrics labels, never falls back to "ErrorCode(n)"), no two
// share one, and the refusals of a batch's contents are not retriable:
// resending the same batch gets the same answer.
func TestErrorCodeNames(t *testing.T) {
	seen := map[string]ErrorCode{}
	for c := None; c <= InvalidRecord; c++ {
		n := c.String()
		if strings.HasPrefix(n, "ErrorCode(") {
			t.Errorf("code %d has no name", c)
		}
		if other, dup := seen[n]; dup {
			t.Errorf("codes %d and %d are both %s", other, c, n)
		}
		seen[n] = c
	}
	if InvalidRecord != 42 || InvalidRecord.String() != "InvalidRecord" {
		t.Fatalf("InvalidRecord is %d %q", InvalidRecord, InvalidRecord)
	}
	for _, c := range []ErrorCode{CorruptMessage, UnsupportedCompressionType, InvalidRecord} {
		if c.Retriable() {
			t.Errorf("%v is retriable", c)
		}
	}
	if got := InvalidRecord.Err("compacted topic t cannot accept a record without a key").Error(); got != "InvalidRecord: compacted topic t cannot accept a record without a key" {
		t.Errorf("error text %q", got)
	}
}
