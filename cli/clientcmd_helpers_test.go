package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	ucli "github.com/urfave/cli/v2"

	"paymentlog/client/clienttest"
)

// startFakeCluster serves a fake 3-broker cluster over QUIC on 127.0.0.1.
func startFakeCluster(tb testing.TB) *clienttest.Cluster {
	tb.Helper()
	fc := clienttest.New(3)
	if err := fc.Serve(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(fc.Close)
	return fc
}

// runCLI runs the paymentlog command line in process with stdin and returns
// stdout, stderr and the exit status.
func runClientCLI(tb testing.TB, stdin io.Reader, args ...string) (string, string, int) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	code := runWithInput(ctx, append([]string{"paymentlog"}, args...), stdin, &out, &errb)
	return out.String(), errb.String(), code
}

// runWithInput is RunContext with a given stdin.
func runWithInput(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	app := NewApp(stdout, stderr)
	app.Reader = stdin
	args = ReorderArgs(app, args)
	if err := app.RunContext(ctx, args); err != nil {
		// As RunContext reports it.
		code := 1
		var ec ucli.ExitCoder
		if errors.As(err, &ec) {
			code = ec.ExitCode()
		}
		if msg := err.Error(); msg != "" {
			fmt.Fprintf(stderr, "paymentlog: %s\n", msg)
		}
		return code
	}
	return 0
}
