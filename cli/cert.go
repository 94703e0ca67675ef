package cli

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"paymentlog/quic"
)

func init() { commands = append(commands, certCommand) }

// certInitOptions are the flags of `paymentlog cert init`.
type certInitOptions struct {
	dir   string
	days  int
	force bool
}

// certIssueOptions are the flags of `paymentlog cert issue`.
type certIssueOptions struct {
	dir    string
	name   string
	hosts  []string
	days   int
	force  bool
	nodeID int32 // > 0: a node certificate for this node id; 0: a client certificate
}

func certDirFlag() ucli.Flag {
	return &ucli.StringFlag{Name: "dir", Usage: "TLS directory (holds ca.crt, ca.key and the issued certificates)",
		EnvVars: []string{"PAYMENTLOG_CERT_DIR", "PAYMENTLOG_TLS_DIR"}}
}

// certDir is the --dir of a cert command, or a usage error. It is checked
// here, not with urfave/cli's Required, which printed the whole help text to
// stdout and exited 1.
func certDir(c *ucli.Context) (string, error) {
	dir := c.String("dir")
	if dir == "" {
		return "", usageError("missing --dir (usage: %s)", usageLine(c))
	}
	return dir, nil
}

// usageLine is the first line of the command's usage text.
func usageLine(c *ucli.Context) string {
	u, _, _ := strings.Cut(c.Command.UsageText, "\n")
	return u
}

func certForceFlag() ucli.Flag {
	return &ucli.BoolFlag{Name: "force", Usage: "overwrite existing files", EnvVars: envVar("CERT_FORCE")}
}

func certCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "cert",
		Usage: "create the cluster CA, issue node and client certificates (mutual TLS), rotate the CA, list and revoke certificates",
		Subcommands: []*ucli.Command{
			{
				Name:      "init",
				Usage:     "create a cluster CA (ECDSA P-256): DIR/ca.crt and DIR/ca.key",
				UsageText: "paymentlog cert init --dir DIR [--days 3650] [--force]",
				Flags: []ucli.Flag{
					certDirFlag(),
					&ucli.IntFlag{Name: "days", Value: int(quic.DefaultCAValidity / (24 * time.Hour)), Usage: "validity in days", EnvVars: envVar("CERT_CA_DAYS")},
					certForceFlag(),
				},
				Action: func(c *ucli.Context) error {
					if c.NArg() > 0 {
						return usageError("cert init takes no arguments (usage: %s)", c.Command.UsageText)
					}
					dir, err := certDir(c)
					if err != nil {
						return err
					}
					opts := certInitOptions{dir: dir, days: c.Int("days"), force: c.Bool("force")}
					return runCertInit(c.Context, opts, c.App.Writer, c.App.ErrWriter)
				},
			},
			{
				Name: "issue",
				Usage: "issue a certificate signed by the cluster CA, valid as server and client: DIR/NAME.crt, DIR/NAME.key; " +
					"with --node-id N a node certificate (may send node-to-node requests, as node N only), else a client certificate",
				UsageText: "paymentlog cert issue --dir DIR --name NAME [--node-id N | --role client] [--host 127.0.0.1,localhost] [--days 1825] [--force]",
				Flags: []ucli.Flag{
					certDirFlag(),
					&ucli.StringFlag{Name: "name", Usage: "certificate name and common name, e.g. node1 or client", EnvVars: envVar("CERT_NAME")},
					&ucli.IntFlag{Name: "node-id", Usage: "issue a node certificate for this node id (the node's --id); without it, a client certificate", EnvVars: envVar("CERT_NODE_ID")},
					&ucli.StringFlag{Name: "role", Usage: "node | client (default: node with --node-id, else client)", EnvVars: envVar("CERT_ROLE")},
					&ucli.StringFlag{Name: "host", Value: "127.0.0.1,localhost", Usage: "comma-separated IP addresses and DNS names the certificate is valid for", EnvVars: envVar("CERT_HOST")},
					&ucli.IntFlag{Name: "days", Value: int(quic.DefaultCertValidity / (24 * time.Hour)), Usage: "validity in days", EnvVars: envVar("CERT_DAYS")},
					certForceFlag(),
				},
				Action: func(c *ucli.Context) error {
					dir, name, err := certDirAndName(c)
					if err != nil {
						return err
					}
					nodeID, err := certNodeID(c.String("role"), c.IsSet("node-id"), c.Int("node-id"))
					if err != nil {
						return err
					}
					opts := certIssueOptions{dir: dir, name: name, hosts: splitList(c.String("host")),
						days: c.Int("days"), force: c.Bool("force"), nodeID: nodeID}
					return runCertIssue(c.Context, opts, c.App.Writer, c.App.ErrWriter)
				},
			},
			{
				Name:      "check",
				Usage:     "print the role a certificate carries; with --node-id, exit 1 unless it is a node certificate for that node",
				UsageText: "paymentlog cert check --dir DIR --name NAME [--node-id N]",
				Flags: []ucli.Flag{
					certDirFlag(),
					&ucli.StringFlag{Name: "name", Usage: "certificate name, e.g. node1 or client", EnvVars: envVar("CERT_NAME")},
					&ucli.IntFlag{Name: "node-id", Usage: "require a node certificate for this node id", EnvVars: envVar("CERT_NODE_ID")},
				},
				Action: func(c *ucli.Context) error {
					dir, name, err := certDirAndName(c)
					if err != nil {
						return err
					}
					nodeID, err := certNodeID("", c.IsSet("node-id"), c.Int("node-id"))
					if err != nil {
						return err
					}
					return runCertCheck(c.Context, certCheckOptions{dir: dir, name: name, nodeID: nodeID}, c.App.Writer)
				},
			},
			certRotateCACommand(),
			certRetireCACommand(),
			certListCommand(),
			certRevokeCommand(),
		},
	}
}

// certCheckOptions are the flags of `paymentlog cert check`.
type certCheckOptions struct {
	dir    string
	name   string
	nodeID int32 // > 0: require a node certificate for this id
}

// runCertCheck prints the certificate's role; with a node id it fails,
// naming the fix, unless the certificate is that node's (what node start
// checks). scripts/cluster.sh uses it to re-issue node certificates made by
// builds older than roles.
func runCertCheck(_ context.Context, o certCheckOptions, stdout io.Writer) error {
	tc := quic.TLSConfig{Dir: o.dir, Name: o.name}
	if o.nodeID > 0 {
		if err := quic.CheckNodeCertificate(tc, o.nodeID); err != nil {
			return err
		}
	}
	id, err := quic.LoadIdentity(tc)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s: %s\n", filepath.Join(o.dir, o.name+".crt"), id)
	return err
}

// certNodeID turns cert issue's --role and --node-id into the node id to
// issue for (0: a client certificate), or a usage error.
func certNodeID(role string, idSet bool, id int) (int32, error) {
	if idSet && (id <= 0 || id > math.MaxInt32) {
		return 0, usageError("--node-id must be a node id (1 to %d), got %d", math.MaxInt32, id)
	}
	switch role {
	case "":
	case "node":
		if !idSet {
			return 0, usageError("--role node needs --node-id N (the node's --id)")
		}
	case "client":
		if idSet {
			return 0, usageError("--role client takes no --node-id (a client certificate names no node)")
		}
	default:
		return 0, usageError("--role must be node or client, got %q", role)
	}
	if !idSet {
		return 0, nil
	}
	return int32(id), nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func certValidity(days int) (time.Duration, error) {
	if days <= 0 {
		return 0, usageError("--days must be positive, got %d", days)
	}
	return time.Duration(days) * 24 * time.Hour, nil
}

func runCertInit(_ context.Context, o certInitOptions, stdout, _ io.Writer) error {
	v, err := certValidity(o.days)
	if err != nil {
		return err
	}
	if err := quic.InitCA(o.dir, quic.CertOptions{Validity: v, Force: o.force}); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "created cluster CA: %s %s\n",
		filepath.Join(o.dir, quic.CAFile), filepath.Join(o.dir, quic.CAKeyFile))
	return err
}

func runCertIssue(_ context.Context, o certIssueOptions, stdout, _ io.Writer) error {
	v, err := certValidity(o.days)
	if err != nil {
		return err
	}
	if err := quic.IssueCert(o.dir, o.name, o.hosts, quic.CertOptions{Validity: v, Force: o.force, NodeID: o.nodeID}); err != nil {
		return err
	}
	kind := quic.Identity{Role: quic.RoleClient}
	if o.nodeID > 0 {
		kind = quic.Identity{Role: quic.RoleNode, NodeID: o.nodeID}
	}
	_, err = fmt.Fprintf(stdout, "issued %s, a %s: %s %s (hosts: %s)\n", o.name, kind,
		filepath.Join(o.dir, o.name+".crt"), filepath.Join(o.dir, o.name+".key"), strings.Join(o.hosts, ","))
	return err
}

// certDirAndName reads the --dir and --name of cert issue and cert check
// (the name may also be the one positional argument).
func certDirAndName(c *ucli.Context) (dir, name string, err error) {
	name = c.String("name")
	switch {
	case c.NArg() == 1 && name == "":
		name = c.Args().First()
	case c.NArg() > 0:
		return "", "", usageError("cert %s takes no arguments besides flags (usage: %s)", c.Command.Name, c.Command.UsageText)
	}
	if dir, err = certDir(c); err != nil {
		return "", "", err
	}
	if name == "" {
		return "", "", usageError("missing --name (usage: %s)", c.Command.UsageText)
	}
	return dir, name, nil
}
