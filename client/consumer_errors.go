package client

import (
	"errors"
	"fmt"
)

// OffsetOutOfRangeError is returned by Poll when a partition's position is
// outside the leader's log.
type OffsetOutOfRangeError struct {
	TopicPartition
	Requested int64
	Start     int64 // the log start offset
	End       int64 // the high watermark (-1 if unknown)
}

func (e *OffsetOutOfRangeError) Error() string {
	return fmt.Sprintf("client: %s: offset %d is out of range [%d, %d]", e.TopicPartition, e.Requested, e.Start, e.End)
}

// ErrLogTruncated matches (errors.Is) the *LogTruncatedError Poll returns.
var ErrLogTruncated = errors.New("client: log truncated")

// LogTruncatedError is returned by Poll when a partition's leader no longer
// has the history the consumer has read (KIP-320): its log was truncated
// below the consumer's position and, maybe, written again since, as after
// an unclean leader election or records lost to a crash under --fsync
// never. The records the consumer returned from DivergingEndOffset on are
// not (all) in the leader's log, and whatever the leader now has at the
// position would not follow them.
//
// Poll does not move the position and returns the error again while the
// partition stays where it is: the application decides, by seeking (to
// DivergingEndOffset to read the leader's history from where it parts from
// what was returned, or wherever its reset policy says). A Seek within the
// records returned keeps their leader epochs, so the next fetch is checked
// again from there.
type LogTruncatedError struct {
	TopicPartition
	// Position is the consumer's position: the offset after the last
	// record returned.
	Position int64
	// LastFetchedEpoch is the leader epoch of the last record returned.
	LastFetchedEpoch int32
	// DivergingEpoch and DivergingEndOffset: the histories part at
	// DivergingEndOffset at the latest (<= Position): the leader's end
	// offset for DivergingEpoch (the largest epoch <= LastFetchedEpoch its
	// log knows, -1 if none), lowered to where the records returned left
	// that epoch.
	DivergingEpoch     int32
	DivergingEndOffset int64
}

func (e *LogTruncatedError) Error() string {
	return fmt.Sprintf("client: %s: log truncated: the leader's log parts from the records returned at offset %d "+
		"(position %d, last fetched epoch %d, leader's diverging epoch %d)",
		e.TopicPartition, e.DivergingEndOffset, e.Position, e.LastFetchedEpoch, e.DivergingEpoch)
}

// Unwrap makes errors.Is(err, ErrLogTruncated) hold.
func (e *LogTruncatedError) Unwrap() error { return ErrLogTruncated }

// ErrNoAssignment is returned by Poll when no partition is assigned.
var ErrNoAssignment = errors.New("client: consumer has no partitions assigned")
