package chaos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteFiles(t *testing.T) {
	h := cleanHistory()
	r := &Result{Seed: 9, History: h, Report: Check(h), Events: []Event{{Fault: Fault{N: 1, Kind: Pause}, Victim: 2, Target: "random"}}}
	dir := t.TempDir()
	if err := r.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"schedule.txt": "#1 pause", "writes.tsv": "acked", "reads.tsv": "p1-29", "report.txt": "verdict: OK"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !strings.Contains(string(b), want) {
			t.Fatalf("%s: %v, missing %q:\n%s", name, err, want, b)
		}
	}
}
