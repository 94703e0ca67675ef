package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"

	ucli "github.com/urfave/cli/v2"

	"paymentlog/client"
)

// topicOffsetsCommand is `paymentlog topic offsets NAME [--time T]`
// (Kafka's kafka-get-offsets): every partition's offset at the log start,
// the high watermark, or a time.
func topicOffsetsCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "offsets",
		Usage: "every partition's offset at the log start, the end (high watermark) or a time",
		UsageText: "paymentlog topic offsets NAME [--time earliest|latest|TIME] [--json]\n\n" +
			"TIME is RFC 3339 (2026-12-01T09:30:00Z), @UNIX_MS or now-DURATION (now-2h30m): each\n" +
			"partition's first record stamped at or after it, \"none\" (-1 in --json) where no record is\n" +
			"yet. Each leader answers for its partitions; latest is the high watermark, the next offset a\n" +
			"committed record will get.\n" +
			"A partition that still has no leader after 3s (every replica down) is printed as\n" +
			"\"unavailable\" (in --json: offset -1 and an error), with the reason on stderr and exit status 1.",
		Flags: withFlags(clientFlags(), []ucli.Flag{
			&ucli.StringFlag{Name: "time", Value: "latest", Usage: "earliest | latest | TIME (RFC 3339, @UNIX_MS or now-DURATION)", EnvVars: envVar("TOPIC_OFFSETS_TIME")},
			&ucli.BoolFlag{Name: "json", Usage: "print JSON", EnvVars: envVar("TOPIC_JSON")},
			timeoutFlag("TOPIC_TIMEOUT", defaultAdminTimeout),
		}),
		Action: func(c *ucli.Context) error {
			name, err := oneArg(c, "topic name")
			if err != nil {
				return err
			}
			co, err := parseClientOptions(c)
			if err != nil {
				return usageError("%v", err)
			}
			at, err := parseOffsetsTime(c.String("time"))
			if err != nil {
				return usageError("--time: %v", err)
			}
			return runTopicOffsets(c.Context, co, name, at, c.Bool("json"), c.Duration("timeout"), c.App.Writer, c.App.ErrWriter)
		},
	}
}

// parseOffsetsTime reads --time: client.SeekBeginning, client.SeekEnd or
// Unix milliseconds.
func parseOffsetsTime(s string) (int64, error) {
	off, t, err := parseFrom(s)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q is not earliest, latest or a time (RFC 3339, @UNIX_MS or now-DURATION)", s)
	case !t.IsZero():
		return t.UnixMilli(), nil
	case off < 0:
		return off, nil
	}
	return 0, fmt.Errorf("%q is an offset; --time takes earliest, latest or a time (RFC 3339, @UNIX_MS or now-DURATION)", s)
}

// topicOffsetsJSON is `topic offsets --json`.
type topicOffsetsJSON struct {
	Topic   string              `json:"topic"`
	Time    string              `json:"time"` // earliest, latest, or the time in RFC 3339 (UTC)
	Offsets []partitionOffsetJS `json:"offsets"`
}

type partitionOffsetJS struct {
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`          // -1: no record stamped at or after the time, or unavailable
	Error     string `json:"error,omitempty"` // why the partition has no offset (no leader)
}

// offsetsUnavailableWait is how long topic offsets retries a partition
// without a leader before it reports the partition unavailable.
const offsetsUnavailableWait = 3 * time.Second

func runTopicOffsets(ctx context.Context, co clientOptions, name string, at int64, asJSON bool, timeout time.Duration, stdout, stderr io.Writer) error {
	return withAdmin(ctx, co, timeout, stderr, func(ctx context.Context, a *client.Admin) error {
		offs, unavailable, err := a.ListOffsetsAvailable(ctx, name, at, offsetsUnavailableWait)
		if err != nil {
			return fmt.Errorf("topic offsets %s: %w", name, err)
		}
		parts := make([]int32, 0, len(offs)+len(unavailable))
		for p := range offs {
			parts = append(parts, p)
		}
		for p := range unavailable {
			parts = append(parts, p)
		}
		slices.Sort(parts)
		if asJSON {
			out := topicOffsetsJSON{Topic: name, Time: offsetsTimeName(at), Offsets: []partitionOffsetJS{}}
			for _, p := range parts {
				if e := unavailable[p]; e != nil {
					out.Offsets = append(out.Offsets, partitionOffsetJS{Partition: p, Offset: -1, Error: e.Error()})
					continue
				}
				out.Offsets = append(out.Offsets, partitionOffsetJS{Partition: p, Offset: offs[p]})
			}
			b, err := json.Marshal(out)
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintf(stdout, "%s\n", b); err != nil {
				return err
			}
		} else {
			for _, p := range parts {
				o := fmt.Sprint(offs[p])
				switch {
				case unavailable[p] != nil:
					o = "unavailable"
				case offs[p] < 0:
					o = "none"
				}
				fmt.Fprintf(stdout, "%s:%d:%s\n", name, p, o)
			}
		}
		if len(unavailable) == 0 {
			return nil
		}
		var first int32 = -1
		for _, p := range parts {
			if unavailable[p] != nil {
				first = p
				break
			}
		}
		return fmt.Errorf("topic offsets %s: %d of %d partitions unavailable after %v (partition %d: %v)",
			name, len(unavailable), len(parts), offsetsUnavailableWait, first, unavailable[first])
	})
}

func offsetsTimeName(at int64) string {
	switch at {
	case client.SeekBeginning:
		return "earliest"
	case client.SeekEnd:
		return "latest"
	}
	return time.UnixMilli(at).UTC().Format(time.RFC3339Nano)
}
