package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"paymentlog/node/audit"
)

// log audit-verify: an intact file is reported with its line count and
// hashes; an edited line is named, exit status 1; no file is a usage error.
func TestLogAuditVerify(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := audit.Open(path, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []string{"CreateTopic", "AlterConfigs", "DeleteTopic"} {
		l.Admin(audit.Who{Principal: "User:ops"}, op, nil, nil, audit.ResultOK, "")
	}
	l.Close()
	code, out, errs := runCLI(t, "log", "audit-verify", path)
	if code != 0 || !strings.HasPrefix(out, path+": 3 lines, chain intact; continues from none (the file starts the chain); last ") {
		t.Fatalf("verify: %d %q %q", code, out, errs)
	}
	b, _ := os.ReadFile(path)
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), "AlterConfigs", "AlterConfig ", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs = runCLI(t, "log", "audit-verify", path)
	if code != 1 || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "line 3 does not follow line 2") {
		t.Fatalf("verify an edited file: %d %q", code, errs)
	}
	if code, _, errs := runCLI(t, "log", "audit-verify"); code != 2 || !strings.Contains(errs, "missing FILE") {
		t.Fatalf("no file: %d %q", code, errs)
	}
}

// log audit-verify FILE checks the files the node rotated FILE to, in
// order, and names the one after a rotated file that was removed.
func TestLogAuditVerifyRotatedFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := audit.Open(path, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	l.SetRotation(1024, 0)
	for i := range 60 {
		l.Admin(audit.Who{Principal: "User:ops"}, "CreateTopic", map[string]int{"n": i}, nil, audit.ResultOK, "")
	}
	l.Close()
	rotated, err := audit.RotatedFiles(path)
	if err != nil || len(rotated) < 3 {
		t.Fatalf("rotated %v, %v; want at least 3 files", rotated, err)
	}
	code, out, errs := runCLI(t, "log", "audit-verify", path)
	want := fmt.Sprintf("%s: %d files, 60 lines, chain intact across them\n", path, len(rotated)+1)
	if code != 0 || !strings.HasPrefix(out, rotated[0]+": ") || !strings.Contains(out, "(the file before)") || !strings.HasSuffix(out, want) {
		t.Fatalf("verify: %d %q %q; want every file, then %q", code, out, errs, want)
	}
	if err := os.Remove(rotated[1]); err != nil {
		t.Fatal(err)
	}
	code, _, errs = runCLI(t, "log", "audit-verify", path)
	if code != 1 || !strings.Contains(errs, rotated[2]+" does not continue "+rotated[0]) {
		t.Fatalf("verify with %s removed: %d %q", rotated[1], code, errs)
	}
}
