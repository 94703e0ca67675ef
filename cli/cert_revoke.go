package cli

import (
	"fmt"
	"io"
	"math/big"
	"path/filepath"
	"time"

	ucli "github.com/urfave/cli/v2"

	"paymentlog/quic"
)

// certRevokeCommand is `paymentlog cert revoke`: list a certificate in the
// directory's revoked.txt, which endpoints using the directory refuse from
// their next TLS reload on (quic.RevokedFile).
func certRevokeCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "revoke",
		Usage: "refuse a certificate the CA signed (a leaked key, someone who left): add it to DIR/revoked.txt",
		UsageText: "paymentlog cert revoke --dir DIR (--name NAME | --serial HEX) [--reason TEXT]\n\n" +
			"Adds the certificate's serial (DIR/NAME.crt's, or HEX as cert list prints it) to\n" +
			"DIR/revoked.txt. Every node and client using a directory with that file refuses the\n" +
			"certificate from its next TLS reload on (SIGHUP, or within --tls-reload-interval, 1m by\n" +
			"default) and closes the connections it holds: copy revoked.txt into every node's --tls-dir,\n" +
			"as you would ca.crt. Issue the owner a new certificate (cert issue --force) if they stay.",
		Flags: []ucli.Flag{
			certDirFlag(),
			&ucli.StringFlag{Name: "name", Usage: "revoke DIR/`NAME`.crt", EnvVars: envVar("CERT_REVOKE_NAME")},
			&ucli.StringFlag{Name: "serial", Usage: "revoke the certificate with this serial (hex, as cert list prints it)", EnvVars: envVar("CERT_REVOKE_SERIAL")},
			&ucli.StringFlag{Name: "reason", Usage: "a note kept beside the serial in revoked.txt", EnvVars: envVar("CERT_REVOKE_REASON")},
		},
		Action: func(c *ucli.Context) error {
			dir, err := certDirOnly(c)
			if err != nil {
				return err
			}
			name, serialHex := c.String("name"), c.String("serial")
			if (name == "") == (serialHex == "") {
				return usageError("give --name NAME or --serial HEX (usage: %s)", usageLine(c))
			}
			return runCertRevoke(dir, name, serialHex, c.String("reason"), time.Now(), c.App.Writer)
		},
	}
}

func runCertRevoke(dir, name, serialHex, reason string, now time.Time, stdout io.Writer) error {
	var serial *big.Int
	what := ""
	if name != "" {
		c, err := quic.ReadCert(dir, name)
		if err != nil {
			return fmt.Errorf("cert revoke: %w", err)
		}
		if c.IsCA {
			return fmt.Errorf("cert revoke: %s.crt is a CA certificate: retire a CA with cert rotate-ca and cert retire-ca", name)
		}
		serial, what = c.SerialNumber, fmt.Sprintf("%s (serial %s)", name, c.SerialNumber.Text(16))
		reason = fmt.Sprintf("%s %s", name, reason)
	} else {
		var err error
		if serial, err = quic.ParseSerial(serialHex); err != nil {
			return usageError("--serial: %v", err)
		}
		what = "serial " + serial.Text(16)
	}
	already, err := quic.RevokeCert(dir, serial, reason, now)
	switch {
	case err != nil:
		return fmt.Errorf("cert revoke: %w", err)
	case already:
		fmt.Fprintf(stdout, "%s is already in %s\n", what, filepath.Join(dir, quic.RevokedFile))
	default:
		fmt.Fprintf(stdout, "revoked %s in %s: endpoints using %s refuse it from their next TLS reload (SIGHUP, or within --tls-reload-interval)\n",
			what, filepath.Join(dir, quic.RevokedFile), dir)
	}
	return nil
}
