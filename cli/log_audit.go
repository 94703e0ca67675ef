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
// inserted (node/audit/chain.go), across the files it rotated
// (node/audit/rotate.go, trail.go).
func logAuditVerifyCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "audit-verify",
		Usage: "check that no line of an audit trail (node start --audit-log) was edited, removed or inserted, across its rotated files",
		UsageText: "paymentlog log audit-verify FILE...\n\n" +
			"Each line of an audit file carries the SHA-256 of the line before it (prev). Each FILE is a trail: the\n" +
			"files the node rotated it to (FILE.<time>, found next to it) are checked first, oldest first, then FILE;\n" +
			"each file's first line must continue the last line of the file before it, so a rotated file removed\n" +
			"from the middle is named. Prints, per file, its lines, the hash its first line continues from (none: the\n" +
			"trail starts there; for the oldest file kept, the last hash of a file deleted before it) and the hash of\n" +
			"its last line (record it elsewhere to notice lines removed from the end later, which the chain alone\n" +
			"cannot show). Exit status 1 at the first line, or file, that does not follow the one before it, naming both.",
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
		if _, err := os.Stat(name); err != nil {
			if rotated, _ := audit.RotatedFiles(name); len(rotated) == 0 { // missing after a crash mid-rotation: its rotated files
				return fmt.Errorf("log audit-verify: %w", err)
			}
		}
		reps, err := audit.VerifyTrail(name)
		for i, rep := range reps {
			if i == len(reps)-1 && err != nil {
				break // the file with the break: the error names it
			}
			anchor := rep.Anchor
			switch {
			case rep.Lines == 0:
				anchor = "nothing (empty)"
			case anchor == "" && i == 0:
				anchor = "none (the file starts the chain)"
			case i == 0:
				anchor += " (a file before it, deleted or archived)"
			case anchor == "":
				anchor = "none"
			default:
				anchor += " (the file before)"
			}
			fmt.Fprintf(stdout, "%s: %d lines, chain intact; continues from %s; last %s\n", rep.Path, rep.Lines, anchor, rep.Last)
		}
		if err != nil {
			return fmt.Errorf("log audit-verify: %w", err)
		}
		if len(reps) > 1 {
			lines := 0
			for _, rep := range reps {
				lines += rep.Lines
			}
			fmt.Fprintf(stdout, "%s: %d files, %d lines, chain intact across them\n", name, len(reps), lines)
		}
	}
	return nil
}
