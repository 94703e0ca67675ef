package chaos

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"paymentlog/client"
)

// A consumer told its history was truncated (client.ErrLogTruncated) is
// recorded as a divergence, once per partition and position although Poll
// repeats the error, and the checker reports it as read-diverged; other
// poll errors are retried and recorded nowhere. The consumers used to retry
// ErrLogTruncated forever, so the run reported at most consumer-behind.
func TestPollFailedRecordsDivergence(t *testing.T) {
	w := &Workload{log: slog.New(slog.DiscardHandler)}
	now := time.Unix(1700000000, 0)
	truncated := func(part int32, pos int64) error {
		return fmt.Errorf("poll: %w", &client.LogTruncatedError{
			TopicPartition: client.TopicPartition{Topic: "chaos", Partition: part}, Position: pos,
			LastFetchedEpoch: 3, DivergingEpoch: 2, DivergingEndOffset: pos - 2})
	}
	for range 3 { // Poll returns it again while the position stays
		w.pollFailed(1, truncated(2, 10), now)
	}
	w.pollFailed(0, truncated(2, 10), now) // another consumer
	w.pollFailed(1, &client.OffsetOutOfRangeError{TopicPartition: client.TopicPartition{Topic: "chaos", Partition: 1}, Requested: 5}, now)
	w.pollFailed(1, errors.New("client: no leader"), now)

	ds := w.Divergences()
	if len(ds) != 2 {
		t.Fatalf("divergences %+v; want one for each consumer", ds)
	}
	if d := ds[0]; d.Consumer != 1 || d.Partition != 2 || d.Position != 10 || d.DivergingEndOffset != 8 ||
		d.LastFetchedEpoch != 3 || d.DivergingEpoch != 2 || !d.At.Equal(now) {
		t.Fatalf("divergence %+v", d)
	}

	h := cleanHistory()
	h.Divergences = ds
	r := Check(h)
	if r.Count(ReadDiverged) != 2 || r.SafetyViolations() != 2 || r.OK() {
		t.Fatalf("counts %v; want two read-diverged, a safety violation", r.Counts)
	}
}
