package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"paymentlog/client"
	"paymentlog/node/metadata"
)

// A delete-records file is Kafka's kafka-delete-records --offset-json-file:
//
//	{"version": 1, "partitions": [
//	  {"topic": "payments", "partition": 0, "offset": 812},
//	  {"topic": "payments", "partition": 1, "offset": -1},
//	  ...]}
//
// Each partition's records below its offset are deleted; -1 is the
// partition's high watermark (all its committed records), as in Kafka.
// Version 1 only; any other key is refused by name, so that a typo does
// not pass for an empty file; a partition listed twice is refused.
type deleteRecordsFile struct {
	Version    int                    `json:"version"`
	Partitions []deleteRecordsFileRow `json:"partitions"`
}

type deleteRecordsFileRow struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// deleteRecordsTopic is one topic's part of a file: its partitions'
// offsets (client.DeleteRecordsLatest for -1).
type deleteRecordsTopic struct {
	topic   string
	offsets map[int32]int64
}

// parseDeleteRecordsFile reads and checks a file, returning its topics in
// name order.
func parseDeleteRecordsFile(data []byte) ([]deleteRecordsTopic, error) {
	if len(data) > maxPlanBytes {
		return nil, fmt.Errorf("%d bytes, more than the %d a file may have", len(data), maxPlanBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f deleteRecordsFile
	if err := dec.Decode(&f); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	if f.Version != 1 {
		return nil, fmt.Errorf("version %d; only version 1 is known", f.Version)
	}
	if len(f.Partitions) == 0 {
		return nil, errors.New(`"partitions" lists no partition`)
	}
	byTopic := map[string]map[int32]int64{}
	for i, r := range f.Partitions {
		if err := metadata.ValidateTopicName(r.Topic); err != nil {
			return nil, fmt.Errorf("partitions[%d]: %v", i, err)
		}
		if r.Partition < 0 {
			return nil, fmt.Errorf("partitions[%d]: partition %d is negative", i, r.Partition)
		}
		off := r.Offset
		switch {
		case off == -1:
			off = client.DeleteRecordsLatest
		case off < 0:
			return nil, fmt.Errorf("partitions[%d]: offset %d is neither an offset (0 or more) nor -1 (the high watermark)", i, r.Offset)
		}
		offs := byTopic[r.Topic]
		if offs == nil {
			offs = map[int32]int64{}
			byTopic[r.Topic] = offs
		}
		if _, dup := offs[r.Partition]; dup {
			return nil, fmt.Errorf("partitions[%d]: topic %s partition %d is listed twice", i, r.Topic, r.Partition)
		}
		offs[r.Partition] = off
	}
	out := make([]deleteRecordsTopic, 0, len(byTopic))
	for t, offs := range byTopic {
		out = append(out, deleteRecordsTopic{t, offs})
	}
	slices.SortFunc(out, func(a, b deleteRecordsTopic) int { return strings.Compare(a.topic, b.topic) })
	return out, nil
}
