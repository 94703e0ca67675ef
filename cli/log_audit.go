package cli

import (
	"fmt"
	"io"
	"os"

	ucli "github.com/urfave/cli/v2"

	"paymentlog/node/audit"
)

// logAuditVerifyCommand is `paymentlog log audit-verify FILE...`: check
// that no line of a node's audit trail (--audit-log) was edited, removed or
// inserted (node/audit/chain.go).
func logAuditVerifyCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "audit-verify",
		Usage: "check that no line of an audit trail (node start --audit-log) was edited, removed or inserted",
		UsageText: "paymentlog log audit-verify FILE...\n\n" +
			"Each line of an audit file carries the SHA-256 of the line before it (prev). Prints, per file,\n" +
			"its lines, the hash its first line continues from (none: the file starts the chain; after a\n" +
			"rotation, the last hash of the file before) and the hash of its last line (record it elsewhere\n" +
			"to notice lines removed from the end later, which the chain alone cannot show). Exit status 1\n" +
			"at the first line that does not follow the one before it, naming both.",
		Action: func(c *ucli.Context) error {
			if c.NArg() == 0 {
				return usageError("missing FILE (usage: paymentlog log audit-verify FILE...)")
			}
			return runLogAuditVerify(c.Args().Slice(), c.App.Writer)
		},
	}
}

func runLogAuditVerify(files []string, stdout io.Writer) error {
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("log audit-verify: %w", err)
		}
		rep, err := audit.VerifyChain(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("log audit-verify %s: %w", name, err)
		}
		anchor := rep.Anchor
		if anchor == "" {
			anchor = "none (the file starts the chain)"
		}
		fmt.Fprintf(stdout, "%s: %d lines, chain intact; continues from %s; last %s\n", name, rep.Lines, anchor, rep.Last)
	}
	return nil
}
