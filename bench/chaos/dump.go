package chaos

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// WriteFiles saves the run for later diagnosis into dir: schedule.txt (the
// faults as they ran, after the wall-clock time of t+0), writes.tsv (every record: producer, seq, partition,
// sent and done as milliseconds since the start, outcome, offset, error,
// and in a compacted run key and tombstone), reads.tsv (consumer,
// partition, offset, value — key=value in a compacted run —, ms) and
// report.txt.
func (r *Result) WriteFiles(dir string) error {
	if err := writeLines(filepath.Join(dir, "schedule.txt"), func(w *bufio.Writer) {
		fmt.Fprintf(w, "seed %d plan %+v\n", r.Seed, r.Plan)
		if l := scrubRestartLine(r.Plan.Nodes); l != "" {
			fmt.Fprintln(w, l)
		}
		if r.History != nil {
			// t+0 of the schedule and the *_ms columns, to line them up
			// with the node logs' timestamps.
			fmt.Fprintf(w, "start %s\n", r.History.Start.UTC().Format(time.RFC3339Nano))
		}
		for _, e := range r.Events {
			fmt.Fprintf(w, "%s\t%s\n", e.Fault, e)
		}
	}); err != nil {
		return err
	}
	h := r.History
	if h == nil {
		return nil
	}
	ms := func(t time.Time) int64 {
		if t.IsZero() {
			return -1
		}
		return t.Sub(h.Start).Milliseconds()
	}
	if err := writeLines(filepath.Join(dir, "writes.tsv"), func(w *bufio.Writer) {
		if h.Compacted {
			fmt.Fprintln(w, "producer\tseq\tpartition\tsent_ms\tdone_ms\toutcome\toffset\terr\tkey\ttombstone")
		} else {
			fmt.Fprintln(w, "producer\tseq\tpartition\tsent_ms\tdone_ms\toutcome\toffset\terr")
		}
		for _, x := range h.Writes {
			fmt.Fprintf(w, "%d\t%d\t%d\t%d\t%d\t%s\t%d\t%s", x.ID.Producer, x.ID.Seq, x.Partition, ms(x.Sent), ms(x.Done), x.Outcome, x.Offset, x.Err)
			if h.Compacted {
				fmt.Fprintf(w, "\t%s\t%v", x.Key, x.Tombstone)
			}
			fmt.Fprintln(w)
		}
	}); err != nil {
		return err
	}
	if err := writeLines(filepath.Join(dir, "reads.tsv"), func(w *bufio.Writer) {
		fmt.Fprintln(w, "consumer\tpartition\toffset\tvalue\tat_ms")
		for _, x := range h.Reads {
			fmt.Fprintf(w, "%d\t%d\t%d\t%s\t%d\n", x.Consumer, x.Partition, x.Offset, clip(x.text()), ms(x.At))
		}
	}); err != nil {
		return err
	}
	return writeLines(filepath.Join(dir, "report.txt"), func(w *bufio.Writer) { r.WriteSummary(w) })
}

func writeLines(path string, fn func(w *bufio.Writer)) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	w := bufio.NewWriter(f)
	fn(w)
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("chaos: %w", err)
	}
	return f.Close()
}
