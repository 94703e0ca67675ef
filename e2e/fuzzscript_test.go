package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFuzzScript: scripts/fuzz.sh runs the fuzz targets of the packages it
// is given and says so; a package without targets and an unknown flag are
// usage errors (exit status 2). The failure path (a target that fails, its
// input written) was checked by hand with a throwaway failing target.
func TestFuzzScript(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"--time", "1x", "wire"}, 0, []string{"ok    wire FuzzBytesPlainMsgpack", "fuzz.sh: all 1 passed (1x each)"}},
		{[]string{"--time", "1x", "docs"}, 2, []string{"fuzz.sh: no fuzz targets under docs"}},
		{[]string{"--fuzztime", "1m"}, 2, []string{"fuzz.sh: unknown flag --fuzztime"}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "fuzz.sh"), tc.args...)
		cmd.Dir = t.TempDir()
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		cancel()
		code := exitStatus(t, err, fmt.Sprintf("fuzz.sh %v", tc.args))
		if code != tc.code {
			t.Errorf("fuzz.sh %v: exit status %d, want %d; output:\n%s", tc.args, code, tc.code, out.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("fuzz.sh %v: output lacks %q:\n%s", tc.args, w, out.String())
			}
		}
	}
}
