package cli

import (
	"strings"
	"sync/atomic"
	"testing"

	"paymentlog/quic"
	"paymentlog/wire"

	"paymentlog/client/clienttest"
)

// consume --from beginning still reads everything there is when retention
// deletes the first records between its ListOffsets and its first fetch
// (it goes on at the new log start, with a note on stderr), while an
// explicit --from below the log start is an error.
func TestConsumeFromBeginningAfterRetention(t *testing.T) {
	fc := startFakeCluster(t)
	fc.CreateTopic("t", 1)
	if _, errOut, code := runClientCLI(t, strings.NewReader("a\nb\nc\nd\n"), "produce", "t", "--bootstrap", fc.Bootstrap()); code != 0 {
		t.Fatalf("produce: %s", errOut)
	}
	var once atomic.Bool
	fc.SetIntercept(func(_ string, ft quic.FrameType, _ any) clienttest.Action {
		if ft == wire.TypeFetch && once.CompareAndSwap(false, true) {
			fc.DeleteBefore("t", 0, 2)
		}
		return clienttest.Action{}
	})
	out, errOut, code := runClientCLI(t, nil, "consume", "t", "--from", "beginning", "--exit-at-end", "--bootstrap", fc.Bootstrap())
	if code != 0 || out != "c\nd\n" || !strings.Contains(errOut, "deleted by retention") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 0, c and d, and a note", code, out, errOut)
	}
	_, errOut, code = runClientCLI(t, nil, "consume", "t", "--from", "0", "--exit-at-end", "--bootstrap", fc.Bootstrap())
	if code != 1 || !strings.Contains(errOut, "offsets 2 to 4") {
		t.Fatalf("--from 0: exit %d, stderr %q; want 1 and the range", code, errOut)
	}
}
