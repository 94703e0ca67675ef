package cli

import (
	"strings"
	"testing"
)

// A "--" after the positional argument ends the flags; it is not a second argument.
func TestFlagsAfterPositionalWithDoubleDash(t *testing.T) {
	fc := startFakeCluster(t)
	fc.CreateTopic("payments", 1)
	for _, args := range [][]string{
		{"produce", "payments", "--bootstrap", fc.Bootstrap(), "--json", "--"},
		{"produce", "--bootstrap", fc.Bootstrap(), "payments", "--json", "--"},
		{"produce", "--bootstrap", fc.Bootstrap(), "--json", "--", "payments"},
	} {
		out, errOut, code := runClientCLI(t, strings.NewReader("a\n"), args...)
		if code != 0 || !strings.Contains(out, `"offset"`) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	// After "--", a flag-looking word is an argument.
	_, errOut, code := runClientCLI(t, nil, "produce", "--bootstrap", fc.Bootstrap(), "payments", "--", "--json")
	if code != 2 || !strings.Contains(errOut, "expected one topic") {
		t.Errorf("produce payments -- --json: exit %d, stderr %q", code, errOut)
	}
}

// A flag value that does not parse is one line on stderr and exit status 2,
// with nothing on stdout.
func TestBadFlagValueIsOneLineUsageError(t *testing.T) {
	for _, args := range [][]string{
		{"produce", "payments", "--linger", "xx"},
		{"consume", "payments", "--max", "many"},
		{"topic", "create", "payments", "--timeout", "bogus"},
		{"topic", "create", "payments", "--partitions=three"},
		{"produce", "payments", "--no-such-flag"},
	} {
		out, errOut, code := runClientCLI(t, nil, args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "paymentlog: ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
}
