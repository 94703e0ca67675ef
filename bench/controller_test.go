package bench

import (
	"strings"
	"testing"
)

// TestControllerTrialKeepsEveryError: a trial whose topic creation never
// committed and whose victim then failed to restart reports both; the
// restart error used to replace the first.
func TestControllerTrialKeepsEveryError(t *testing.T) {
	tr := ControllerTrial{Ms: -1}
	tr.fail("no topic creation succeeded within 10s")
	tr.fail("restart: exit status 1")
	if !strings.Contains(tr.Error, "no topic creation succeeded") || !strings.Contains(tr.Error, "restart: exit status 1") {
		t.Fatalf("error %q", tr.Error)
	}
}
