package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"text/tabwriter"
	"time"

	ucli "github.com/urfave/cli/v2"

	"paymentlog/quic"
)

// certListOptions are the flags of `paymentlog cert list`.
type certListOptions struct {
	dir  string
	json bool
	now  time.Time // statuses and days left as of now
}

func certListCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "list",
		Usage:     "list the certificates in DIR (each CA of ca.crt, then every other *.crt): role, issuer, expiry and status",
		UsageText: "paymentlog cert list --dir DIR [--json]",
		Flags: []ucli.Flag{
			certDirFlag(),
			&ucli.BoolFlag{Name: "json", Usage: "print JSON", EnvVars: envVar("CERT_JSON")},
		},
		Action: func(c *ucli.Context) error {
			dir, err := certDirOnly(c)
			if err != nil {
				return err
			}
			return runCertList(c.Context, certListOptions{dir: dir, json: c.Bool("json"), now: time.Now()}, c.App.Writer, c.App.ErrWriter)
		},
	}
}

// certExpiryWarning is how long before NotAfter cert list's status warns.
const certExpiryWarning = 30 * 24 * time.Hour

func runCertList(_ context.Context, o certListOptions, stdout, _ io.Writer) error {
	certs, err := quic.ListCerts(o.dir, o.now)
	if err != nil {
		return err
	}
	if o.json {
		b, err := json.Marshal(certs)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	haveCurrent := false
	for _, ci := range certs {
		haveCurrent = haveCurrent || ci.CurrentCA
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FILE\tROLE\tNODE\tSERIAL\tISSUER\tNOT-AFTER\tDAYS-LEFT\tSTATUS")
	for _, ci := range certs {
		if ci.Error != "" {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\t%s\n", ci.File, ci.Error)
			continue
		}
		node := "-"
		if ci.NodeID > 0 {
			node = fmt.Sprint(ci.NodeID)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", ci.File, ci.Role, node, ci.Serial, ci.Issuer,
			ci.NotAfter.Format(time.DateOnly), daysLeft(ci.ExpiresIn(o.now)), certStatus(ci, o.now, haveCurrent))
	}
	return tw.Flush()
}

// certStatus is cert list's STATUS of ci at now; haveCurrent: some CA of
// the listing is current (the directory has its ca.key).
func certStatus(ci quic.CertInfo, now time.Time, haveCurrent bool) string {
	isCA := ci.File == quic.CAFile
	var status string
	switch {
	case ci.Error != "":
		return ci.Error
	case ci.Revoked:
		return "REVOKED"
	case ci.Expired:
		return "EXPIRED"
	case isCA && ci.CurrentCA:
		status = "current CA"
	case isCA && haveCurrent:
		status = "retiring CA"
	case isCA:
		status = "CA" // no ca.key in the directory: which CA issues is unknown
	case !ci.Trusted:
		return "NOT TRUSTED"
	case haveCurrent && !ci.SignedByCurrentCA:
		return "signed by a retiring CA"
	}
	if left := ci.ExpiresIn(now); left < certExpiryWarning {
		expiring := "expires in " + plural(daysLeft(left), "day")
		if status == "" {
			return expiring
		}
		return status + ", " + expiring
	}
	if status == "" {
		return "ok"
	}
	return status
}

// daysLeft rounds d up to whole days: a certificate issued for 10 days has
// 10 left.
func daysLeft(d time.Duration) int {
	return int(math.Ceil(d.Hours() / 24))
}
