package cli

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"paymentlog/node/metadata"
	"paymentlog/wire"
)

// The offsets file of `group set-offsets --from-file` and `--export` is
// Kafka's kafka-consumer-groups CSV: one partition per line,
//
//	TOPIC,PARTITION,OFFSET
//
// with no header. Reading also skips blank lines and lines starting with
// '#', and allows spaces after the commas. A partition named twice is
// refused, so a file cannot say two things about one partition.

// maxOffsetsFileLines bounds what --from-file reads: far more partitions
// than a group has, and a typo (a log file given by mistake) fails early.
const maxOffsetsFileLines = 1 << 20

// offsetsFileEntry is one line of an offsets file.
type offsetsFileEntry struct {
	wire.GroupOffset
	line int // 1-based, for errors
}

// readOffsetsFile parses an offsets file. name is used in errors only.
func readOffsetsFile(r io.Reader, name string) ([]offsetsFileEntry, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.FieldsPerRecord = 3
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	type tp struct {
		topic string
		part  int32
	}
	seen := map[tp]int{}
	var out []offsetsFileEntry
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, fmt.Errorf("%s line %d: %v (want TOPIC,PARTITION,OFFSET)", name, pe.StartLine, pe.Err)
			}
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		line, _ := cr.FieldPos(0) // only once a record was read: it panics after an error
		if len(out) == maxOffsetsFileLines {
			return nil, fmt.Errorf("%s: more than %d lines", name, maxOffsetsFileLines)
		}
		topic := strings.TrimSpace(rec[0])
		if err := metadata.ValidateTopicName(topic); err != nil {
			return nil, fmt.Errorf("%s line %d: %v", name, line, err)
		}
		part, err := strconv.ParseInt(strings.TrimSpace(rec[1]), 10, 32)
		if err != nil || part < 0 {
			return nil, fmt.Errorf("%s line %d: partition %q is not a non-negative number", name, line, rec[1])
		}
		off, err := strconv.ParseInt(strings.TrimSpace(rec[2]), 10, 64)
		if err != nil || off < 0 {
			return nil, fmt.Errorf("%s line %d: offset %q is not a non-negative number", name, line, rec[2])
		}
		k := tp{topic, int32(part)}
		if prev, ok := seen[k]; ok {
			return nil, fmt.Errorf("%s line %d: topic %s partition %d is already on line %d", name, line, topic, part, prev)
		}
		seen[k] = line
		out = append(out, offsetsFileEntry{GroupOffset: wire.GroupOffset{Topic: topic, Partition: int32(part), Offset: off, LeaderEpoch: -1}, line: line})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no TOPIC,PARTITION,OFFSET line", name)
	}
	return out, nil
}

// writeOffsetsFile writes offs in the offsets file format.
func writeOffsetsFile(w io.Writer, offs []wire.GroupOffset) error {
	cw := csv.NewWriter(w)
	for _, o := range offs {
		if err := cw.Write([]string{o.Topic, strconv.FormatInt(int64(o.Partition), 10), strconv.FormatInt(o.Offset, 10)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
