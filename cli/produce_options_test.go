package cli

import (
	"testing"

	ucli "github.com/urfave/cli/v2"
)

// parsedProduce parses args as `paymentlog produce` would, without running.
func parsedProduce(t *testing.T, args ...string) produceOptions {
	t.Helper()
	cmd := produceCommand()
	var opts produceOptions
	cmd.Action = func(c *ucli.Context) (err error) {
		opts, err = parseProduceOptions(c)
		return err
	}
	app := &ucli.App{Name: "paymentlog", Commands: []*ucli.Command{cmd}}
	if err := app.Run(append([]string{"paymentlog", "produce"}, args...)); err != nil {
		t.Fatalf("produce %v: %v", args, err)
	}
	return opts
}

// Without idempotence a retried batch lands after the ones sent behind it
// (the leader keeps only requests not retried in order), so produce keeps
// stdin's order by sending one at a time; with it, the producer's default
// applies.
func TestProduceWithoutIdempotenceSendsOneRequestAtATime(t *testing.T) {
	if got := parsedProduce(t, "--no-idempotence", "payments").producer; !got.DisableIdempotence || got.MaxInFlight != 1 {
		t.Fatalf("--no-idempotence: DisableIdempotence %v, MaxInFlight %d; want true, 1", got.DisableIdempotence, got.MaxInFlight)
	}
	if got := parsedProduce(t, "payments").producer; got.DisableIdempotence || got.MaxInFlight != 0 {
		t.Fatalf("default: DisableIdempotence %v, MaxInFlight %d; want false, 0 (the producer's default)", got.DisableIdempotence, got.MaxInFlight)
	}
}
