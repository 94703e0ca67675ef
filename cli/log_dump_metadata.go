package cli

import (
	"fmt"
	"strings"

	"paymentlog/node/metadata"
	"paymentlog/raftnode"
)

// describeMetadataRecord renders one record of the metadata log's segment
// files (log dump --metadata, Kafka's kafka-dump-log
// --cluster-metadata-decoder): the raft entry's term and type, its
// proposer and metadata records, or its conf change; what cannot be
// decoded says why.
func describeMetadataRecord(offset int64, key, value []byte) string {
	if offset < 0 {
		return fmt.Sprintf("not a metadata log entry: negative offset %d", offset)
	}
	e, err := raftnode.DecodeDumpRecord(uint64(offset), key, value)
	if err != nil {
		return fmt.Sprintf("undecodable entry: %v", err)
	}
	s := fmt.Sprintf("term: %d %s", e.Term, e.Type)
	switch {
	case e.ConfChange != "":
		return s + ": " + e.ConfChange
	case e.Payload == nil:
		return s + ": no-op (a new leader's)"
	}
	recs, err := metadata.DecodeEntry(e.Payload)
	if err != nil {
		return fmt.Sprintf("%s proposer: %d: undecodable records: %v", s, e.Proposer, err)
	}
	lines := make([]string, len(recs))
	for i, r := range recs {
		lines[i] = metadata.FormatRecord(r)
	}
	return fmt.Sprintf("%s proposer: %d: %s", s, e.Proposer, strings.Join(lines, "; "))
}
