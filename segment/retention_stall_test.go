package segment

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// slowOps are the operations a deletion may not run while appends wait:
// fsyncs, directory fsyncs, renames and unlinks, each of which can take
// tens of milliseconds on a busy disk.
var slowOps = map[FaultOp]bool{OpSync: true, OpSyncDir: true, OpRename: true, OpRemove: true}

// holdEachSlowOp makes every slow operation on fs wait, one at a time:
// each is sent on held (as "op path") and waits for a value on release.
// After disarm() operations pass at once.
func holdEachSlowOp(fs *MemFS) (held chan string, release chan struct{}, disarm func()) {
	var mu sync.Mutex
	armed := true
	held, release = make(chan string), make(chan struct{})
	fs.SetFault(func(op FaultOp, path string) error {
		if !slowOps[op] {
			return nil
		}
		mu.Lock()
		hit := armed
		mu.Unlock()
		if hit {
			held <- fmt.Sprintf("%s %s", op, path)
			<-release
		}
		return nil
	})
	return held, release, func() {
		mu.Lock()
		armed = false
		mu.Unlock()
	}
}

// TestAppendDoesNotWaitForDeletionIO: while a deletion (DeleteBefore, as
// the broker's retention and raft compaction call it, and DeleteRetained)
// is held in each of its fsyncs, renames and unlinks in turn, an Append
// to the same log completes: the deletion holds the append lock only for
// memory work. It used to hold it across every one of them (the
// log-start checkpoint and one directory fsync per deleted segment), so
// every retention pass paused produce on the partition for as long as the
// disk took.
func TestAppendDoesNotWaitForDeletionIO(t *testing.T) {
	for _, how := range []string{"DeleteBefore", "DeleteRetained"} {
		t.Run(how, func(t *testing.T) {
			fs, l, _, opts := buildSealedLog(t, 5)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			// Room in the active segment for every append below.
			opts.SegmentBytes = 1 << 20
			l = mustOpen(t, "/log", opts)
			defer l.Close()
			segs := l.Segments()
			upTo := segs[3] // three sealed segments go
			// Appends of one small batch with the current epoch neither
			// roll nor write the epoch checkpoint: they do no slow I/O.
			if err := l.DeleteBefore(ctx, 0); err != nil { // no-op
				t.Fatal(err)
			}
			epoch := l.mu.epochs.latest()
			held, release, disarm := holdEachSlowOp(fs)
			done := make(chan error, 1)
			go func() {
				var err error
				if how == "DeleteBefore" {
					err = l.DeleteBefore(ctx, upTo)
				} else {
					_, _, err = l.DeleteRetained(ctx, Retention{Bytes: 0, Age: -1, Now: time.Now(), Below: upTo})
				}
				done <- err
			}()
			ops := 0
			for {
				var what string
				select {
				case err := <-done:
					fs.SetFault(nil)
					if err != nil {
						t.Fatalf("%s: %v", how, err)
					}
					if ops == 0 {
						t.Fatal("the deletion did no slow operation: the test tests nothing")
					}
					if l.LogStartOffset() != upTo || l.Segments()[0] != upTo {
						t.Fatalf("log start %d, segments %v; want from %d", l.LogStartOffset(), l.Segments(), upTo)
					}
					t.Logf("%d slow operations held, an append completed during each", ops)
					return
				case what = <-held:
				}
				ops++
				appended := make(chan error, 1)
				go func() {
					_, err := l.Append(ctx, testBatch(100+ops, 1, 1), epoch)
					appended <- err
				}()
				select {
				case err := <-appended:
					if err != nil {
						t.Fatalf("append during %q: %v", what, err)
					}
					release <- struct{}{}
				case <-time.After(2 * time.Second):
					disarm()
					release <- struct{}{}
				drain:
					for {
						select {
						case <-held:
							release <- struct{}{}
						case <-done:
							break drain
						}
					}
					<-appended
					t.Fatalf("%s: an Append waited for the deletion's %q (slow operation %d) to finish", how, what,
						ops)
				}
			}
		})
	}
}
