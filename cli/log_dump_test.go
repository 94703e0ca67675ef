package cli

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"paymentlog/internal/freeport"
	"paymentlog/node"

	"paymentlog/segment"
)

// log dump on a partition directory a real log wrote: every batch, the
// records with --records (flags after the argument), a summary per file;
// a flipped byte makes it report the corrupt batch and exit 1; usage errors
// exit 2.
func TestLogDump(t *testing.T) {
	dir := t.TempDir()
	l, err := segment.Open(context.Background(), dir, segment.Options{SegmentBytes: 1 << 20, IndexInterval: 64})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		b := segment.NewBuilder(segment.BuilderOptions{})
		for j := range 4 {
			b.Add(1_700_000_000_000, nil, []byte(fmt.Sprintf("payment-%d-%d", i, j)), nil)
		}
		if _, err := l.Append(context.Background(), b.Build(), 2); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "log", "dump", dir, "--records")
	if code != 0 || strings.Count(out, "baseOffset: ") != 10 || strings.Count(out, "| offset: ") != 40 ||
		!strings.Contains(out, `value: "payment-9-3"`) || !strings.Contains(out, "Summary: 10 batches, 40 records, offsets 0-39") {
		t.Fatalf("dump: %d %q %q", code, out, errOut)
	}
	seg := filepath.Join(dir, "00000000000000000000")
	if code, out, errOut := runCLI(t, "log", "dump", seg+".index", seg+".timeindex"); code != 0 || strings.Count(out, "Summary: ") != 2 ||
		!strings.Contains(out, "offset: ") {
		t.Fatalf("index dump: %d %q %q", code, out, errOut)
	}
	data, err := os.ReadFile(seg + ".log")
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(seg+".log", data, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCLI(t, "log", "dump", seg+".log")
	if !strings.Contains(out, "corrupt: batch at byte") {
		t.Fatalf("corrupt dump: %d %q %q", code, out, errOut)
	}
	oneErrorLine(t, "log dump of a corrupt segment", code, errOut, 1, "1 file(s) with a corrupt batch")
	code, _, errOut = runCLI(t, "log", "dump")
	oneErrorLine(t, "log dump", code, errOut, 2, "missing FILE")
	code, _, errOut = runCLI(t, "log", "dump", filepath.Join(dir, "leader-epoch-checkpoint"))
	oneErrorLine(t, "log dump of a checkpoint", code, errOut, 1, "not a .log, .index or .timeindex file")
}

// log dump of a partition holding zstd and lz4 batches: each batch's line
// names its codec and --records prints the values decompressed. A zstd
// batch whose section no longer decompresses (its CRC made to match, as a
// buggy writer would) prints one UNDECODABLE line; the batches after it
// are still dumped, the summary counts it, and the exit status is 1.
func TestLogDumpCompressed(t *testing.T) {
	dir := t.TempDir()
	l, err := segment.Open(context.Background(), dir, segment.Options{SegmentBytes: 1 << 20, IndexInterval: 64})
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for i, c := range []segment.Codec{segment.CodecZstd, segment.CodecLZ4, segment.CodecZstd} {
		b := segment.NewBuilder(segment.BuilderOptions{Compression: c})
		for j := range 50 {
			b.Add(1_700_000_000_000, nil, []byte(paymentLine(100*i+j)), nil)
		}
		batch := b.Build()
		sizes = append(sizes, len(batch))
		if _, err := l.Append(context.Background(), batch, 2); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "log", "dump", dir, "--records", "--max-value-bytes", "-1")
	if code != 0 || strings.Count(out, " compression: zstd ") != 2 || strings.Count(out, " compression: lz4 ") != 1 ||
		strings.Count(out, "| offset: ") != 150 || !strings.Contains(out, "value: "+strconv.Quote(paymentLine(249))+"\n") {
		t.Fatalf("dump: %d %q %q", code, out, errOut)
	}

	// Garble the first batch's compressed section and restamp its CRC.
	seg := filepath.Join(dir, "00000000000000000000.log")
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	first := data[:sizes[0]]
	for i := segment.HeaderSize + 8; i < len(first); i += 3 {
		first[i] ^= 0x5a
	}
	const offCRC, offAttributes = 17, 21 // segment's header layout
	binary.BigEndian.PutUint32(first[offCRC:], crc32.Checksum(first[offAttributes:], crc32.MakeTable(crc32.Castagnoli)))
	if err := os.WriteFile(seg, data, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCLI(t, "log", "dump", seg, "--records")
	if strings.Count(out, "| UNDECODABLE: records of the batch at byte 0 (compression zstd): segment: corrupt") != 1 ||
		strings.Count(out, "| offset: ") != 100 || !strings.Contains(out, "Summary: 3 batches, 150 records, offsets 0-149") ||
		!strings.Contains(out, "; 1 batches whose records do not decode") {
		t.Fatalf("dump of an undecodable batch: %d %q %q", code, out, errOut)
	}
	oneErrorLine(t, "log dump of an undecodable batch", code, errOut, 1, "1 file(s) with a corrupt batch")
}

// log dump --records of a node's metadata log decodes its entries: the
// topic created, the ACL binding and the quota set through the CLI are
// there as metadata records, with raft's no-op and the nodes'
// registrations; a bad record is shown as undecodable, not printed as
// bytes or a panic.
func TestLogDumpMetadataLog(t *testing.T) {
	dir := t.TempDir()
	addr := freeport.UDPAddr(t)
	cfg := node.DefaultConfig()
	cfg.ID, cfg.Addr, cfg.DataDir = 1, addr, dir
	cfg.Controllers = map[int32]string{1: addr}
	cfg.NoRaftSync = true
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	nd, err := node.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer nd.Kill()
	run := func(args ...string) {
		t.Helper()
		if _, errOut, code := runClientCLI(t, nil, append(args, "--bootstrap="+addr, "--timeout", "30s")...); code != 0 {
			t.Fatalf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
	run("topic", "create", "payments", "--partitions", "1", "--replication-factor", "1", "--min-insync-replicas", "1")
	run("acl", "add", "--principal", "billing", "--operation", "read", "--topic", "payments")
	run("quota", "set", "--principal", "billing", "--consumer-byte-rate", "1MiB")
	nd.Kill()

	var out bytes.Buffer
	if err := runLogDump([]string{filepath.Join(dir, node.MetadataDirName)}, segment.DumpOptions{Records: true}, false, &out); err != nil {
		t.Fatalf("log dump: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"EntryNormal: no-op (a new leader's)",
		"BrokerRegistered",
		"TopicCreated payments",
		"ACLsCreated allow User:billing read topic literal:payments",
		"ClientQuotasChanged User:billing consumer_byte_rate=1048576",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the metadata log's dump lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "key: ") {
		t.Errorf("records printed as bytes:\n%s", out.String())
	}
	if got := describeMetadataRecord(5, []byte{9, 9, 9}, nil); !strings.HasPrefix(got, "undecodable entry: ") {
		t.Errorf("a bad key: %q", got)
	}
	if got := describeMetadataRecord(5, []byte{1, 0, 2}, []byte{1, 1, 1, 0xff}); !strings.Contains(got, "undecodable records") {
		t.Errorf("a bad payload: %q", got)
	}
}
