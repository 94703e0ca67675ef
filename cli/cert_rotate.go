package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"paymentlog/quic"
)

// certDirOnly reads the --dir of a cert command that takes no arguments.
func certDirOnly(c *ucli.Context) (string, error) {
	if c.NArg() > 0 {
		return "", usageError("cert %s takes no arguments (usage: %s)", c.Command.Name, usageLine(c))
	}
	return certDir(c)
}

// certRotateOptions are the flags of `paymentlog cert rotate-ca`.
type certRotateOptions struct {
	dir  string
	days int
}

func certRotateCACommand() *ucli.Command {
	return &ucli.Command{
		Name: "rotate-ca",
		Usage: "make a new cluster CA: DIR/ca.key becomes its key and DIR/ca.crt trusts it besides the old CAs; " +
			"then reload ca.crt everywhere, reissue every certificate and retire-ca",
		UsageText: "paymentlog cert rotate-ca --dir DIR [--days 3650]",
		Flags: []ucli.Flag{
			certDirFlag(),
			&ucli.IntFlag{Name: "days", Value: int(quic.DefaultCAValidity / (24 * time.Hour)), Usage: "validity of the new CA in days", EnvVars: envVar("CERT_CA_DAYS")},
		},
		Action: func(c *ucli.Context) error {
			dir, err := certDirOnly(c)
			if err != nil {
				return err
			}
			return runCertRotateCA(c.Context, certRotateOptions{dir: dir, days: c.Int("days")}, c.App.Writer, c.App.ErrWriter)
		},
	}
}

func runCertRotateCA(_ context.Context, o certRotateOptions, stdout, _ io.Writer) error {
	v, err := certValidity(o.days)
	if err != nil {
		return err
	}
	ca, err := quic.RotateCA(o.dir, quic.CertOptions{Validity: v})
	if err != nil {
		return err
	}
	certs, err := quic.ListCerts(o.dir, time.Now())
	if err != nil {
		return err
	}
	cas, reissue := 0, []string{}
	for _, ci := range certs {
		switch {
		case ci.File == quic.CAFile && ci.Error == "":
			cas++
		case ci.File != quic.CAFile && ci.File != quic.CAKeyFile && !ci.SignedByCurrentCA:
			reissue = append(reissue, ci.File)
		}
	}
	if len(reissue) == 0 {
		reissue = append(reissue, "none")
	}
	_, err = fmt.Fprintf(stdout, "new CA %q (serial %s, expires %s); %s now trusts %d CAs, %s is the new CA's key\n"+
		"Next:\n"+
		"  1. copy ca.crt wherever nodes and clients read it, and let every node reload it (SIGHUP, or wait for --tls-reload-interval)\n"+
		"  2. reissue every certificate with `paymentlog cert issue --dir %s --name NAME --force` (keeping its --node-id and --host) and let its holder reload it; in %s: %s\n"+
		"  3. then `paymentlog cert retire-ca --dir %s`\n",
		ca.Name, ca.Serial, ca.NotAfter.Format(time.DateOnly), filepath.Join(o.dir, quic.CAFile), cas, filepath.Join(o.dir, quic.CAKeyFile),
		o.dir, o.dir, strings.Join(reissue, ", "), o.dir)
	return err
}

// certRetireOptions are the flags of `paymentlog cert retire-ca`.
type certRetireOptions struct {
	dir   string
	force bool
}

func certRetireCACommand() *ucli.Command {
	return &ucli.Command{
		Name: "retire-ca",
		Usage: "drop every CA but the current one (the CA of DIR/ca.key) from DIR/ca.crt; " +
			"refuses while a certificate in DIR is not signed by the current CA",
		UsageText: "paymentlog cert retire-ca --dir DIR [--force]",
		Flags: []ucli.Flag{
			certDirFlag(),
			// A variable of its own: a PAYMENTLOG_CERT_FORCE set for cert
			// issue must not lock nodes out here.
			&ucli.BoolFlag{Name: "force", Usage: "retire even when certificates in DIR are not signed by the current CA (their holders are locked out)", EnvVars: envVar("CERT_RETIRE_FORCE")},
		},
		Action: func(c *ucli.Context) error {
			dir, err := certDirOnly(c)
			if err != nil {
				return err
			}
			return runCertRetireCA(c.Context, certRetireOptions{dir: dir, force: c.Bool("force")}, c.App.Writer, c.App.ErrWriter)
		},
	}
}

func runCertRetireCA(_ context.Context, o certRetireOptions, stdout, stderr io.Writer) error {
	retired, err := quic.RetireCAs(o.dir, o.force)
	if err != nil {
		return err
	}
	caPath := filepath.Join(o.dir, quic.CAFile)
	if len(retired) == 0 {
		_, err = fmt.Fprintf(stdout, "nothing to retire: %s holds only the current CA\n", caPath)
		return err
	}
	for _, ca := range retired {
		fmt.Fprintf(stdout, "retired CA %q (serial %s, expires %s)\n", ca.Name, ca.Serial, ca.NotAfter.Format(time.DateOnly))
	}
	if o.force {
		certs, err := quic.ListCerts(o.dir, time.Now())
		if err != nil {
			return err
		}
		for _, ci := range certs {
			// Expired ones were not trusted before either.
			if ci.File != quic.CAFile && ci.Error == "" && !ci.Trusted && !ci.Expired {
				fmt.Fprintf(stderr, "paymentlog: warning: %s is not trusted any more: reissue it with `paymentlog cert issue --dir %s --name %s --force`\n",
					ci.File, o.dir, strings.TrimSuffix(ci.File, ".crt"))
			}
		}
	}
	_, err = fmt.Fprintf(stdout, "%s now trusts only the current CA. Next: copy it wherever nodes and clients read it, and let every node reload it "+
		"(SIGHUP, or wait for --tls-reload-interval); a peer presenting a certificate of a retired CA is then refused\n", caPath)
	return err
}
