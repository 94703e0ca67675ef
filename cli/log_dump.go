package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"paymentlog/node"
	"paymentlog/segment"
)

func init() { commands = append(commands, logCommand) }

// logCommand is `paymentlog log dump`: Kafka's kafka-dump-log, for a
// partition's files on disk (offline; a running node's files may change
// while they are read).
func logCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "log",
		Usage: "inspect a partition's files on disk, and check an audit trail's chain",
		Subcommands: []*ucli.Command{{
			Name:  "dump",
			Usage: "print the batches of segment files (.log) and the entries of their indexes, checked as recovery checks them",
			UsageText: "paymentlog log dump FILE|DIR... [--records] [--max-value-bytes N] [--metadata]\n\n" +
				"A .log file prints one line per batch (offsets, position, size, leader epoch, producer id and\n" +
				"sequences, timestamps, compression codec, CRC) and then where its valid data ends: the end of\n" +
				"the file, zeros never written (an active segment's room), a torn tail, or a corrupt batch.\n" +
				"--records prints the records of compressed batches decompressed; a batch whose records do not\n" +
				"decode prints an UNDECODABLE line and the dump goes on. .index and .timeindex files print their\n" +
				"entries. A directory dumps its .log files. Exit status 1 when a file holds a corrupt batch, an\n" +
				"undecodable one, an offset gap or an index entry out of order. With --records, the\n" +
				"files of the metadata log (a directory named " + node.MetadataDirName + ", or with --metadata) print\n" +
				"each raft entry decoded: its term, proposer and metadata records (topics, ISR changes, group\n" +
				"offsets, ACLs, quotas...), or its conf change.",
			Flags: []ucli.Flag{
				&ucli.BoolFlag{Name: "records", Usage: "also print every record: offset, timestamp, key, value, headers", EnvVars: envVar("LOG_DUMP_RECORDS")},
				&ucli.IntFlag{Name: "max-value-bytes", Value: 64, Usage: "print at most this many bytes of each key and value (-1: all)", EnvVars: envVar("LOG_DUMP_MAX_VALUE_BYTES")},
				&ucli.BoolFlag{Name: "metadata", Usage: "decode records as metadata log entries (automatic for files in a directory named " + node.MetadataDirName + ")", EnvVars: envVar("LOG_DUMP_METADATA")},
			},
			Action: func(c *ucli.Context) error {
				if c.NArg() == 0 {
					return usageError("missing FILE (usage: paymentlog log dump FILE|DIR...)")
				}
				opts := segment.DumpOptions{Records: c.Bool("records"), MaxValueBytes: c.Int("max-value-bytes")}
				return runLogDump(c.Args().Slice(), opts, c.Bool("metadata"), c.App.Writer)
			},
		}, logAuditVerifyCommand()},
	}
}

// errDumpFound makes `log dump` exit 1 after printing everything.
type errDumpFound struct{ problems int }

func (e errDumpFound) Error() string {
	return fmt.Sprintf("log dump: %d file(s) with a corrupt batch, an offset gap or an index out of order", e.problems)
}

func runLogDump(args []string, opts segment.DumpOptions, metadataLog bool, stdout io.Writer) error {
	var files []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return fmt.Errorf("log dump: %w", err)
		}
		if !st.IsDir() {
			files = append(files, a)
			continue
		}
		logs, err := filepath.Glob(filepath.Join(a, "*.log"))
		if err != nil {
			return err
		}
		if len(logs) == 0 {
			return fmt.Errorf("log dump: %s holds no .log file", a)
		}
		slices.Sort(logs)
		files = append(files, logs...)
	}
	problems := 0
	for _, f := range files {
		fopts := opts
		if metadataLog || filepath.Base(filepath.Dir(f)) == node.MetadataDirName {
			fopts.Describe = describeMetadataRecord
		}
		bad, err := dumpFile(f, fopts, stdout)
		if err != nil {
			return err
		}
		if bad {
			problems++
		}
	}
	if problems > 0 {
		return errDumpFound{problems}
	}
	return nil
}

// dumpFile dumps one file; bad reports a corruption, a gap or disorder.
func dumpFile(path string, opts segment.DumpOptions, stdout io.Writer) (bad bool, err error) {
	name := strings.TrimSuffix(filepath.Base(path), ".deleted")
	ext := filepath.Ext(name)
	base, perr := strconv.ParseInt(strings.TrimSuffix(name, ext), 10, 64)
	if ext != ".log" && ext != ".index" && ext != ".timeindex" {
		return false, fmt.Errorf("log dump: %s: not a .log, .index or .timeindex file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("log dump: %w", err)
	}
	defer f.Close()
	fmt.Fprintf(stdout, "Dumping %s\n", path)
	if ext == ".log" {
		st, err := f.Stat()
		if err != nil {
			return false, fmt.Errorf("log dump: %w", err)
		}
		s, err := segment.DumpLog(stdout, f, st.Size(), opts)
		if err != nil {
			return false, fmt.Errorf("log dump: %s: %w", path, err)
		}
		offsets := "none"
		if s.Batches > 0 {
			offsets = fmt.Sprintf("%d-%d", s.FirstOffset, s.LastOffset)
		}
		end := s.End
		if end == "" {
			end = "the valid batches fill the file"
		}
		fmt.Fprintf(stdout, "Summary: %d batches, %d records, offsets %s, %d of %d bytes valid; %s", s.Batches, s.Records,
			offsets, s.ValidBytes, s.FileBytes, end)
		if s.Gaps > 0 {
			fmt.Fprintf(stdout, "; %d offset gaps", s.Gaps)
		}
		if s.BadRecords > 0 {
			fmt.Fprintf(stdout, "; %d batches whose records do not decode", s.BadRecords)
		}
		if perr == nil && s.Batches > 0 && s.FirstOffset != base {
			fmt.Fprintf(stdout, "; the first batch's offset %d is not the file's base offset %d", s.FirstOffset, base)
			bad = true
		}
		fmt.Fprintln(stdout)
		return bad || s.Corrupt || s.Gaps > 0 || s.BadRecords > 0, nil
	}
	if perr != nil {
		return false, fmt.Errorf("log dump: %s: the name is not a segment's base offset (20 digits)", path)
	}
	kind := segment.OffsetIndex
	if ext == ".timeindex" {
		kind = segment.TimeIndex
	}
	n, disorder, err := segment.DumpIndex(stdout, f, kind, base)
	if err != nil {
		return false, fmt.Errorf("log dump: %s: %w", path, err)
	}
	fmt.Fprintf(stdout, "Summary: %d entries, %d out of order\n", n, disorder)
	return disorder > 0, nil
}
