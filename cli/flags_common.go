package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"paymentlog/client"
	"paymentlog/quic"
)

// envVar names a flag's environment variable: PAYMENTLOG_<NAME>.
func envVar(name string) []string { return []string{"PAYMENTLOG_" + name} }

// Flags shared by every client command (topic, cluster, produce, consume).
// Their environment variables are unprefixed (PAYMENTLOG_BOOTSTRAP,
// PAYMENTLOG_TLS_DIR, ...) so one setting serves all client commands; the
// commands' own flags use PAYMENTLOG_<COMMAND>_<FLAG>.
func clientFlags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.StringFlag{Name: "bootstrap", Value: strings.Join(client.DefaultBootstrap, ","),
			Usage: "cluster nodes to contact first (host:port,...)", EnvVars: envVar("BOOTSTRAP")},
		&ucli.StringFlag{Name: "tls-dir", Usage: "directory with ca.crt and the client certificate (mutual TLS); empty: dev mode, no verification",
			EnvVars: envVar("TLS_DIR")},
		&ucli.StringFlag{Name: "cert-name", Value: client.DefaultCertName, Usage: "certificate name in --tls-dir",
			EnvVars: envVar("CLIENT_CERT_NAME")},
		&ucli.StringFlag{Name: "client-log-level", Value: "error", Usage: "client library log level: debug | info | warn | error",
			EnvVars: envVar("CLIENT_LOG_LEVEL")},
		&ucli.DurationFlag{Name: "metadata-max-age", Value: client.DefaultMetadataMaxAge,
			Usage:   "refresh cluster metadata at least this often (a running produce or consume finds added partitions)",
			EnvVars: envVar("METADATA_MAX_AGE")},
	}
}

// timeoutFlag is the overall deadline of an admin command.
func timeoutFlag(env string, def time.Duration) ucli.Flag {
	return &ucli.DurationFlag{Name: "timeout", Value: def, Usage: "give up after this long", EnvVars: envVar(env)}
}

// clientOptions are the parsed clientFlags.
type clientOptions struct {
	bootstrap []string
	tlsDir    string
	certName  string
	logLevel  slog.Level
	// metadataMaxAge is client.Config.MetadataMaxAge (0: the default).
	metadataMaxAge time.Duration
}

func parseClientOptions(c *ucli.Context) (clientOptions, error) {
	o := clientOptions{
		bootstrap:      client.ParseBootstrap(c.String("bootstrap")),
		tlsDir:         c.String("tls-dir"),
		certName:       c.String("cert-name"),
		metadataMaxAge: c.Duration("metadata-max-age"),
	}
	if o.metadataMaxAge < 0 {
		return o, fmt.Errorf("--metadata-max-age must not be negative")
	}
	if len(o.bootstrap) == 0 {
		return o, fmt.Errorf("--bootstrap: no addresses")
	}
	for _, a := range o.bootstrap {
		if !strings.Contains(a, ":") {
			return o, fmt.Errorf("--bootstrap: %q is not host:port", a)
		}
	}
	if err := o.logLevel.UnmarshalText([]byte(c.String("client-log-level"))); err != nil {
		return o, fmt.Errorf("--client-log-level: %w", err)
	}
	return o, nil
}

// newClient connects a client library instance per the options; its logs go to stderr.
func (o clientOptions) newClient(ctx context.Context, stderr io.Writer) (*client.Client, error) {
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: o.logLevel}))
	return client.New(ctx, client.Config{
		Bootstrap:      o.bootstrap,
		TLS:            quic.TLSConfig{Dir: o.tlsDir, Name: o.certName},
		Logger:         logger,
		MetadataMaxAge: o.metadataMaxAge,
	})
}

// closeClient closes c with a short grace period.
func closeClient(c *client.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = c.Close(ctx)
}

// usageError makes urfave/cli exit with status 2 and msg on stderr.
func usageError(format string, args ...any) error {
	return ucli.Exit(fmt.Sprintf(format, args...), 2)
}

// oneArg returns the single positional argument (what names it, e.g. "topic name").
func oneArg(c *ucli.Context, what string) (string, error) {
	switch c.NArg() {
	case 0:
		usage, _, _ := strings.Cut(c.Command.UsageText, "\n")
		return "", usageError("missing %s (usage: %s)", what, usage)
	case 1:
		return c.Args().First(), nil
	}
	return "", usageError("expected one %s, got %d arguments: %s", what, c.NArg(), strings.Join(c.Args().Slice(), " "))
}

// withFlags concatenates flag lists.
func withFlags(lists ...[]ucli.Flag) []ucli.Flag {
	var out []ucli.Flag
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}
