package raftnode

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// scrubLogEndFile, in the metadata directory, is what the node knew when
// its scrub stopped it (scrub.go): the index and term of the last entry in
// its log, the offset its entry log started at, and whether it was a voter
// or a learner then. The next start's repair (scrub_repair.go) reads it,
// before the open, and removes it; a start without a scrub's mark removes a
// stale one. Written atomically and durably, one line:
// "<index> <term> <start> voter|learner\n", decimal. One that is absent, or
// not exactly that, counts as nothing known (the repair then guards the
// node).
const scrubLogEndFile = "scrub-log-end"

// scrubLogEnd is the content of scrubLogEndFile.
type scrubLogEnd struct {
	index, term uint64 // the last entry
	start       uint64 // the entry log's start offset
	voter       bool
}

func encodeScrubLogEnd(e scrubLogEnd) []byte {
	role := "learner"
	if e.voter {
		role = "voter"
	}
	return fmt.Appendf(nil, "%d %d %d %s\n", e.index, e.term, e.start, role)
}

var errBadScrubLogEnd = errors.New("raftnode: malformed " + scrubLogEndFile)

// decodeScrubLogEnd accepts only what encodeScrubLogEnd writes.
func decodeScrubLogEnd(b []byte) (scrubLogEnd, error) {
	f := strings.Fields(string(b))
	if len(f) != 4 {
		return scrubLogEnd{}, errBadScrubLogEnd
	}
	var e scrubLogEnd
	var err1, err2, err3 error
	e.index, err1 = strconv.ParseUint(f[0], 10, 64)
	e.term, err2 = strconv.ParseUint(f[1], 10, 64)
	e.start, err3 = strconv.ParseUint(f[2], 10, 64)
	e.voter = f[3] == "voter"
	if err1 != nil || err2 != nil || err3 != nil || string(encodeScrubLogEnd(e)) != string(b) {
		return scrubLogEnd{}, errBadScrubLogEnd
	}
	return e, nil
}

// recordScrubLogEnd writes scrubLogEndFile as the scrub stops the node. A
// failed write is logged: the repair then guards the node. Loop only.
func (n *Node) recordScrubLogEnd() {
	last := n.st.lastIndex()
	term, err := n.st.Term(last)
	e := scrubLogEnd{index: last, term: term, start: n.st.log.Start(),
		voter: slices.Contains(n.confState.GetVoters(), n.id) || slices.Contains(n.confState.GetVotersOutgoing(), n.id)}
	if err == nil {
		err = n.st.files.WriteFile(scrubLogEndFile, encodeScrubLogEnd(e))
	}
	if err != nil {
		n.lg.Warn("raftnode: could not record the metadata log's end for the repair; the next start guards this node whatever the repair finds",
			"err", err)
	}
}

// readScrubLogEnd returns the recorded log end, known if a sound one is
// there; present if the file is there at all.
func readScrubLogEnd(files fileStore) (e scrubLogEnd, known, present bool, err error) {
	b, err := files.ReadFile(scrubLogEndFile)
	if errors.Is(err, os.ErrNotExist) {
		return scrubLogEnd{}, false, false, nil
	}
	if err != nil {
		return scrubLogEnd{}, false, false, fmt.Errorf("raftnode: %w", err)
	}
	e, err = decodeScrubLogEnd(b)
	return e, err == nil, true, nil
}
