package cli

import (
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
