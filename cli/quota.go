package cli

import (
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	ucli "github.com/urfave/cli/v2"

	"paymentlog/client"
	"paymentlog/wire"
)

func init() { commands = append(commands, quotaCommand) }

// quotaCommand is `paymentlog quota`: client quotas (Kafka's
// kafka-configs --entity-type users --alter --add-config
// producer_byte_rate=...), enforced by every node on its own traffic.
func quotaCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "quota",
		Usage: "set, delete and list client quotas: the bytes per second each principal may produce to and fetch from each node",
		Subcommands: []*ucli.Command{
			{
				Name:  "set",
				Usage: "set the producer and consumer byte rates of a principal, or the default ones",
				UsageText: "paymentlog quota set (--principal NAME | --default) [--producer-byte-rate RATE] [--consumer-byte-rate RATE]\n\n" +
					"NAME is a client certificate's common name (paymentlog cert issue --name NAME), as NAME or\n" +
					"User:NAME. --default sets the quota of every principal without one of its own for that rate.\n" +
					"RATE is bytes per second, at least 1024: an integer, or one with KiB, MiB or GiB (512KiB,\n" +
					"1MiB). Rates not given are left as they are. Quotas are per node: a principal may produce\n" +
					"to, and fetch from, each node at its rates; a node holds back the answers of a principal\n" +
					"over its rate until it is back under. Node certificates (replication) are never throttled.",
				Flags: quotaFlags(quotaSet),
				Action: func(c *ucli.Context) error {
					opts, err := parseQuotaOptions(c, quotaSet)
					if err != nil {
						return err
					}
					return runQuotaAlter(c.Context, opts, c.App.Writer, c.App.ErrWriter)
				},
			},
			{
				Name:  "delete",
				Usage: "delete the quotas of a principal (it then has the default ones, if any), or the default ones",
				UsageText: "paymentlog quota delete (--principal NAME | --default) [--producer-byte-rate] [--consumer-byte-rate]\n\n" +
					"--producer-byte-rate and --consumer-byte-rate (no value) choose the quotas to delete;\n" +
					"neither: both. Deleting a quota that is not set is no error.",
				Flags: quotaFlags(quotaDelete),
				Action: func(c *ucli.Context) error {
					opts, err := parseQuotaOptions(c, quotaDelete)
					if err != nil {
						return err
					}
					return runQuotaAlter(c.Context, opts, c.App.Writer, c.App.ErrWriter)
				},
			},
			{
				Name:      "list",
				Usage:     "list the quotas set: the default's and each principal's",
				UsageText: "paymentlog quota list [--json]",
				Flags:     quotaFlags(quotaList),
				Action: func(c *ucli.Context) error {
					opts, err := parseQuotaOptions(c, quotaList)
					if err != nil {
						return err
					}
					return runQuotaList(c.Context, opts, c.App.Writer, c.App.ErrWriter)
				},
			},
		},
	}
}

// quotaVerb is a quota subcommand.
type quotaVerb string

const (
	quotaSet    quotaVerb = "set"
	quotaDelete quotaVerb = "delete"
	quotaList   quotaVerb = "list"
)

// quotaFlags are the flags of quota verb.
func quotaFlags(verb quotaVerb) []ucli.Flag {
	ev := func(name string) []string { return envVar("QUOTA_" + name) }
	var own []ucli.Flag
	entity := []ucli.Flag{
		&ucli.StringFlag{Name: "principal", EnvVars: ev("PRINCIPAL"),
			Usage: "the principal: a client certificate's common name, as NAME or User:NAME"},
		&ucli.BoolFlag{Name: "default", EnvVars: ev("DEFAULT"),
			Usage: "the default quota: of every principal without one of its own"},
	}
	switch verb {
	case quotaSet:
		own = append(entity,
			&ucli.StringFlag{Name: "producer-byte-rate", EnvVars: ev("PRODUCER_BYTE_RATE"),
				Usage: "bytes per second the principal may produce to each node (1048576, 512KiB, 1MiB; at least 1024)"},
			&ucli.StringFlag{Name: "consumer-byte-rate", EnvVars: ev("CONSUMER_BYTE_RATE"),
				Usage: "bytes per second the principal may fetch from each node (1048576, 512KiB, 1MiB; at least 1024)"})
	case quotaDelete:
		own = append(entity,
			&ucli.BoolFlag{Name: "producer-byte-rate", EnvVars: ev("DELETE_PRODUCER_BYTE_RATE"),
				Usage: "delete the producer byte rate (neither this nor --consumer-byte-rate: both)"},
			&ucli.BoolFlag{Name: "consumer-byte-rate", EnvVars: ev("DELETE_CONSUMER_BYTE_RATE"),
				Usage: "delete the consumer byte rate (neither this nor --producer-byte-rate: both)"})
	case quotaList:
		own = append(own, &ucli.BoolFlag{Name: "json", Usage: "print JSON", EnvVars: ev("JSON")})
	}
	own = append(own, timeoutFlag("QUOTA_TIMEOUT", defaultAdminTimeout))
	return withFlags(clientFlags(), own)
}

// quotaOptions are the parsed flags of a quota subcommand.
type quotaOptions struct {
	client  clientOptions
	entry   wire.QuotaEntry // set and delete
	json    bool
	timeout time.Duration
}

// parseQuotaOptions reads and checks a quota subcommand's flags; every
// error is a usage error.
func parseQuotaOptions(c *ucli.Context, verb quotaVerb) (quotaOptions, error) {
	if c.NArg() > 0 {
		why := "the principal and rates are flags"
		if verb == quotaDelete {
			why = "--producer-byte-rate and --consumer-byte-rate take no value: they name the quotas to delete"
		} else if verb == quotaList {
			why = "it lists every quota"
		}
		return quotaOptions{}, usageError("quota %s takes no arguments (got %s): %s", verb, strings.Join(c.Args().Slice(), " "), why)
	}
	co, err := parseClientOptions(c)
	if err != nil {
		return quotaOptions{}, usageError("%v", err)
	}
	opts := quotaOptions{client: co, json: verb == quotaList && c.Bool("json"), timeout: c.Duration("timeout")}
	if verb == quotaList {
		return opts, nil
	}
	if opts.entry, err = parseQuotaEntry(c, verb); err != nil {
		return quotaOptions{}, usageError("quota %s: %v", verb, err)
	}
	return opts, nil
}

// parseQuotaEntry is the change quota set or delete asks for.
func parseQuotaEntry(c *ucli.Context, verb quotaVerb) (wire.QuotaEntry, error) {
	var e wire.QuotaEntry
	switch principal, def := c.IsSet("principal"), c.Bool("default"); {
	case principal && def:
		return e, fmt.Errorf("--principal and --default: give one")
	case def:
		e.Principal = ""
	case principal:
		p, err := normalizePrincipal(c.String("principal"))
		if err != nil {
			return e, err
		}
		if p == wire.WildcardPrincipal {
			return e, fmt.Errorf("--principal %s: a quota is each principal's own; for every principal without one, give --default",
				c.String("principal"))
		}
		e.Principal = p
	default:
		return e, fmt.Errorf("missing --principal NAME or --default")
	}
	keys := []struct{ flag, key string }{
		{"producer-byte-rate", wire.QuotaProducerByteRate},
		{"consumer-byte-rate", wire.QuotaConsumerByteRate},
	}
	if verb == quotaDelete {
		for _, k := range keys {
			if c.Bool(k.flag) {
				e.Delete = append(e.Delete, k.key)
			}
		}
		if len(e.Delete) == 0 {
			e.Delete = []string{wire.QuotaProducerByteRate, wire.QuotaConsumerByteRate}
		}
	} else {
		for _, k := range keys {
			if !c.IsSet(k.flag) {
				continue
			}
			rate, err := parseByteRate(c.String(k.flag))
			if err != nil {
				return e, fmt.Errorf("--%s: %v", k.flag, err)
			}
			if e.Set == nil {
				e.Set = map[string]int64{}
			}
			e.Set[k.key] = rate
		}
		if len(e.Set) == 0 {
			return e, fmt.Errorf("missing --producer-byte-rate or --consumer-byte-rate (bytes per second; give one or both)")
		}
	}
	if why := wire.CheckQuotaEntry(e); why != "" {
		return e, fmt.Errorf("%s", why)
	}
	return e, nil
}

// byteRateUnits are the suffixes a rate may have, longest first.
var byteRateUnits = []struct {
	suffix, name string
	size         int64
}{{"gib", "GiB", 1 << 30}, {"mib", "MiB", 1 << 20}, {"kib", "KiB", 1 << 10}, {"b", "B", 1}}

// parseByteRate reads a quota's bytes per second: an integer, optionally
// followed by KiB, MiB or GiB (any case, a space before it allowed, and
// /s after it), at least wire.MinQuotaByteRate.
func parseByteRate(s string) (int64, error) {
	bad := fmt.Errorf("%q: want bytes per second, an integer or one with KiB, MiB or GiB (1048576, 512KiB, 1MiB)", s)
	t := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(s)), "/s")
	size := int64(1)
	for _, u := range byteRateUnits {
		if n, ok := strings.CutSuffix(t, u.suffix); ok {
			t, size = strings.TrimSpace(n), u.size
			break
		}
	}
	if t == "" || strings.IndexFunc(t, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
		return 0, bad
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n > math.MaxInt64/size {
		return 0, fmt.Errorf("%q: too large", s)
	}
	if n *= size; n < wire.MinQuotaByteRate {
		return 0, fmt.Errorf("%s: at least %d bytes per second (1 KiB/s)", s, wire.MinQuotaByteRate)
	}
	return n, nil
}

// humanByteRate prints bytes per second in binary units: 1 MiB/s, 1.5 MiB/s.
func humanByteRate(n int64) string {
	for _, u := range byteRateUnits {
		if n >= u.size || u.size == 1 {
			if n%u.size == 0 {
				return fmt.Sprintf("%d %s/s", n/u.size, u.name)
			}
			return fmt.Sprintf("%.1f %s/s", float64(n)/float64(u.size), u.name)
		}
	}
	return ""
}

// formatByteRate is a rate exactly and readably: 1048576 (1 MiB/s).
func formatByteRate(n int64) string {
	return fmt.Sprintf("%d (%s)", n, humanByteRate(n))
}

// quotaEntityLabel names an entity in the table: (default) or the principal.
func quotaEntityLabel(principal string) string {
	if principal == "" {
		return "(default)"
	}
	return principal
}

func runQuotaAlter(ctx context.Context, opts quotaOptions, stdout, stderr io.Writer) error {
	e := opts.entry
	return withAdmin(ctx, opts.client, opts.timeout, stderr, func(ctx context.Context, a *client.Admin) error {
		if err := a.AlterClientQuotas(ctx, e); err != nil {
			if len(e.Set) > 0 {
				return fmt.Errorf("set quota: %w", err)
			}
			return fmt.Errorf("delete quota: %w", err)
		}
		var parts []string
		for _, k := range wire.QuotaKeys {
			if v, ok := e.Set[k]; ok {
				parts = append(parts, k+"="+formatByteRate(v))
			}
		}
		if len(parts) > 0 {
			fmt.Fprintf(stdout, "set quota of %s: %s\n", wire.QuotaEntityName(e.Principal), strings.Join(parts, ", "))
		}
		if len(e.Delete) > 0 {
			fmt.Fprintf(stdout, "deleted quota of %s: %s\n", wire.QuotaEntityName(e.Principal), strings.Join(e.Delete, ", "))
		}
		return nil
	})
}

// quotaJSON is one entity in `quota list --json`.
type quotaJSON struct {
	// Principal is "" for the default (Default true).
	Principal string `json:"principal"`
	Default   bool   `json:"default"`
	// The rates in bytes per second; null when not set.
	ProducerByteRate *int64 `json:"producer_byte_rate"`
	ConsumerByteRate *int64 `json:"consumer_byte_rate"`
}

// quotaListJSON is `quota list --json`.
type quotaListJSON struct {
	Quotas []quotaJSON `json:"quotas"`
}

// quotaPerNodeNote ends the quota table.
const quotaPerNodeNote = "quotas are per node: a principal may produce to, and fetch from, each node at its rates"

func runQuotaList(ctx context.Context, opts quotaOptions, stdout, stderr io.Writer) error {
	return withAdmin(ctx, opts.client, opts.timeout, stderr, func(ctx context.Context, a *client.Admin) error {
		qs, err := a.DescribeClientQuotas(ctx)
		if err != nil {
			return fmt.Errorf("list quotas: %w", err)
		}
		if opts.json {
			out := quotaListJSON{Quotas: make([]quotaJSON, 0, len(qs))}
			for _, q := range qs {
				j := quotaJSON{Principal: q.Principal, Default: q.Principal == ""}
				if v, ok := q.Values[wire.QuotaProducerByteRate]; ok {
					j.ProducerByteRate = &v
				}
				if v, ok := q.Values[wire.QuotaConsumerByteRate]; ok {
					j.ConsumerByteRate = &v
				}
				out.Quotas = append(out.Quotas, j)
			}
			return printJSON(stdout, out)
		}
		if len(qs) == 0 {
			fmt.Fprintln(stdout, "no quotas")
			return nil
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ENTITY\tPRODUCER BYTE RATE\tCONSUMER BYTE RATE")
		rate := func(q wire.ClientQuota, k string) string {
			if v, ok := q.Values[k]; ok {
				return formatByteRate(v)
			}
			return "-"
		}
		for _, q := range qs {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", quotaEntityLabel(q.Principal), rate(q, wire.QuotaProducerByteRate), rate(q, wire.QuotaConsumerByteRate))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(stdout, quotaPerNodeNote)
		return nil
	})
}
