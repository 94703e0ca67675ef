package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	ucli "github.com/urfave/cli/v2"

	"paymentlog/client"
)

// topicAlterCommand is `paymentlog topic alter NAME --partitions N`
// (Kafka's `kafka-topics --alter --partitions N`): it raises the topic's
// partition count and waits until every new partition has a leader.
func topicAlterCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "alter",
		Usage: "add partitions to a topic and wait until every partition has a leader",
		UsageText: "paymentlog topic alter NAME --partitions N\n\n" +
			"Raises the topic's partition count to N (the new total). The count only grows: N at or below\n" +
			"the current count is refused. New partitions get the topic's replication factor and are\n" +
			"placed over the alive nodes like a new topic's; the topic keeps its id and its existing\n" +
			"partitions keep their records. Keyed records move: producers put a key on hash(key) % N,\n" +
			"so from the change on most keys go to another partition than before. Running producers\n" +
			"write to the new partitions once their metadata is refreshed (--metadata-max-age, 30s by\n" +
			"default); `paymentlog consume` following all partitions reads them from their beginning.",
		Flags: withFlags(clientFlags(), []ucli.Flag{
			&ucli.IntFlag{Name: "partitions", Usage: "the new total number of partitions (required; more than now)", EnvVars: envVar("TOPIC_ALTER_PARTITIONS")},
			timeoutFlag("TOPIC_TIMEOUT", defaultAdminTimeout),
		}),
		Action: func(c *ucli.Context) error {
			opts, err := parseTopicAlter(c)
			if err != nil {
				return err
			}
			return runTopicAlter(c.Context, opts, c.App.Writer, c.App.ErrWriter)
		},
	}
}

// topicAlterOptions are the flags of `paymentlog topic alter`.
type topicAlterOptions struct {
	client     clientOptions
	name       string
	partitions int32
	timeout    time.Duration
}

func parseTopicAlter(c *ucli.Context) (topicAlterOptions, error) {
	name, err := oneArg(c, "topic name")
	if err != nil {
		return topicAlterOptions{}, err
	}
	co, err := parseClientOptions(c)
	if err != nil {
		return topicAlterOptions{}, usageError("%v", err)
	}
	o := topicAlterOptions{client: co, name: name, timeout: c.Duration("timeout")}
	if !c.IsSet("partitions") {
		return o, usageError("topic alter %s: --partitions is required (the new total partition count)", name)
	}
	p := c.Int("partitions")
	if p < 1 || p > 1<<31-1 {
		return o, usageError("--partitions must be at least 1")
	}
	o.partitions = int32(p)
	return o, nil
}

func runTopicAlter(ctx context.Context, opts topicAlterOptions, stdout, stderr io.Writer) error {
	return withAdmin(ctx, opts.client, opts.timeout, stderr, func(ctx context.Context, a *client.Admin) error {
		if err := a.CreatePartitions(ctx, opts.name, opts.partitions); err != nil {
			return fmt.Errorf("alter topic %s: %w", opts.name, err)
		}
		fmt.Fprintf(stdout, "topic %s now has %d partitions\n", opts.name, opts.partitions)
		return nil
	})
}
