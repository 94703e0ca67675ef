package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"paymentlog/segment"
)

// log dump on a partition directory a real log wrote: every batch, the
// records with --records (flags after the argument), a summary per file;
// a flipped byte makes it report the corrupt batch and exit 1; usage errors
// exit 2.
func TestLogDump(t *testing.T) {
	dir := t.TempDir()
	l, err := segment.Open(context.Background(), dir, segment.Options{SegmentBytes: 1 << 20, IndexInterval: 64})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		b := segment.NewBuilder(segment.BuilderOptions{})
		for j := range 4 {
			b.Add(1_700_000_000_000, nil, []byte(fmt.Sprintf("payment-%d-%d", i, j)), nil)
		}
		if _, err := l.Append(context.Background(), b.Build(), 2); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "log", "dump", dir, "--records")
	if code != 0 || strings.Count(out, "baseOffset: ") != 10 || strings.Count(out, "| offset: ") != 40 ||
		!strings.Contains(out, `value: "payment-9-3"`) || !strings.Contains(out, "Summary: 10 batches, 40 records, offsets 0-39") {
		t.Fatalf("dump: %d %q %q", code, out, errOut)
	}
	seg := filepath.Join(dir, "00000000000000000000")
	if code, out, errOut := runCLI(t, "log", "dump", seg+".index", seg+".timeindex"); code != 0 || strings.Count(out, "Summary: ") != 2 ||
		!strings.Contains(out, "offset: ") {
		t.Fatalf("index dump: %d %q %q", code, out, errOut)
	}
	data, err := os.ReadFile(seg + ".log")
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(seg+".log", data, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCLI(t, "log", "dump", seg+".log")
	if !strings.Contains(out, "corrupt: batch at byte") {
		t.Fatalf("corrupt dump: %d %q %q", code, out, errOut)
	}
	oneErrorLine(t, "log dump of a corrupt segment", code, errOut, 1, "1 file(s) with a corrupt batch")
	code, _, errOut = runCLI(t, "log", "dump")
	oneErrorLine(t, "log dump", code, errOut, 2, "missing FILE")
	code, _, errOut = runCLI(t, "log", "dump", filepath.Join(dir, "leader-epoch-checkpoint"))
	oneErrorLine(t, "log dump of a checkpoint", code, errOut, 1, "not a .log, .index or .timeindex file")
}
