package cli

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// paymentLine is payment event i as one line of JSON: what a payment
// producer sends, and what compresses.
func paymentLine(i int) string {
	currencies := []string{"EUR", "USD", "GBP", "CHF"}
	statuses := []string{"authorized", "captured", "refunded", "declined"}
	return fmt.Sprintf(`{"payment_id":"pay_%08d","merchant_id":"m_%04d","amount_minor":%d,"currency":"%s","status":"%s",`+
		`"card":{"brand":"visa","last4":"%04d"},"created_at":"2026-12-02T10:%02d:%02dZ"}`,
		i, i%97, 1000+i*7, currencies[i%4], statuses[i/4%4], i%10000, i/60%60, i%60)
}

var batchSize = regexp.MustCompile(` size: (\d+) `)

// produce --compression against two real nodes: payment lines produced
// with zstd, lz4 (from PAYMENTLOG_PRODUCE_COMPRESSION) and none are
// consumed back byte for byte, and both replicas store them as produced:
// log dump names each batch's codec, a compressed topic's batches take
// less than half the lines' bytes on disk, and --records prints the
// lines decompressed.
func TestProduceCompressionOnNodes(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	bootstrap, nodes := startNodesIn(t, dirs)
	bs := "--bootstrap=" + bootstrap
	waitForCLI(t, "two alive nodes", func() bool {
		out, _, code := runClientCLI(t, nil, "cluster", "status", "--json", bs, "--timeout", "10s")
		return code == 0 && strings.Count(out, `"state":"alive"`) == 2
	})
	const n = 3000
	var in strings.Builder
	for i := range n {
		in.WriteString(paymentLine(i) + "\n")
	}
	payload := in.Len() - n // the values, without their line endings
	codecs := []string{"zstd", "lz4", "none"}
	for _, codec := range codecs {
		topic := "payments-" + codec
		if out, errOut, code := runClientCLI(t, nil, "topic", "create", topic, "--partitions", "1", "--replication-factor", "2",
			"--min-insync-replicas", "2", bs, "--timeout", "30s"); code != 0 {
			t.Fatalf("create %s: %d %q %q", topic, code, out, errOut)
		}
		t.Run("produce "+codec, func(t *testing.T) {
			args := []string{"produce", topic, bs}
			if codec == "lz4" {
				t.Setenv("PAYMENTLOG_PRODUCE_COMPRESSION", codec)
			} else {
				args = append(args, "--compression", codec)
			}
			if out, errOut, code := runClientCLI(t, strings.NewReader(in.String()), args...); code != 0 {
				t.Fatalf("produce: %d %q %q", code, out, errOut)
			}
		})
		out, errOut, code := runClientCLI(t, nil, "consume", topic, "--exit-at-end", bs)
		if code != 0 || out != in.String() {
			t.Fatalf("consume %s: exit %d, %q; %d bytes, want the %d produced", topic, code, errOut, len(out), in.Len())
		}
	}
	for _, nd := range nodes {
		nd.Kill() // log dump reads files no node writes
	}
	for i, dir := range dirs {
		for _, codec := range codecs {
			part := filepath.Join(dir, "payments-"+codec+"-0")
			code, out, errOut := runCLI(t, "log", "dump", part, "--records", "--max-value-bytes", "-1")
			if code != 0 || strings.Count(out, "| offset: ") != n {
				t.Fatalf("node %d, %s: log dump exit %d, %q, %d records:\n%s", i+1, codec, code, errOut, strings.Count(out, "| offset: "), out)
			}
			for _, j := range []int{0, n / 2, n - 1} {
				if want := "value: " + strconv.Quote(paymentLine(j)); !strings.Contains(out, want) {
					t.Fatalf("node %d, %s: the dump lacks %s", i+1, codec, want)
				}
			}
			stored, batches := 0, 0
			for _, line := range strings.Split(out, "\n") {
				if !strings.HasPrefix(line, "baseOffset: ") {
					continue
				}
				batches++
				// A batch the codec does not shrink is built uncompressed
				// (segment.BuilderOptions.Compression): a lone payment line
				// (about 200 bytes) under lz4 or zstd, when the producer's linger
				// closed a batch holding one record (CI saw it once).
				if !strings.Contains(line, " compression: "+codec+" ") &&
					!(strings.Contains(line, " compression: none ") && strings.Contains(line, " count: 1 ")) {
					t.Fatalf("node %d, %s: a batch stored otherwise: %s", i+1, codec, line)
				}
				size, _ := strconv.Atoi(batchSize.FindStringSubmatch(line)[1])
				stored += size
			}
			t.Logf("node %d, %s: %d batches, %d bytes for %d bytes of values (%.2f)", i+1, codec, batches, stored, payload, float64(stored)/float64(payload))
			if compressed := codec != "none"; compressed && 2*stored >= payload || !compressed && stored < payload {
				t.Fatalf("node %d, %s: %d bytes stored for %d bytes of values", i+1, codec, stored, payload)
			}
		}
	}
}
