package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"paymentlog/segment"
)

// A node whose scrub finds a corrupt batch in a sealed segment stops (the
// partition's log fails, as for any storage failure, so its leaderships
// move to in-sync replicas), and its next start repairs the partition:
// truncated at the batch, what follows set aside, registered torn, fetched
// again from the leader. Rot in the metadata log stops it the same way, and
// its next start repairs that log under raft's rejoin guard (raftnode's
// scrub_repair.go). Without a supervisor that restarts it, the node
// would stay down, and every partition it holds would run a replica short.
// So `node start` starts the node again itself, in the same process, after
// such a stop (--log-scrub-restart, default on), at most scrubRestartMax
// times in scrubRestartWindow: corruption that keeps coming back is a disk
// or memory to replace, and the process then exits with the error. Other
// failures (a failed fsync, a failed metadata log) still end the process:
// their repair is not a restart's to make.

const (
	scrubRestartMax    = 3
	scrubRestartWindow = time.Hour
)

// restartBudget counts the restarts in a sliding window.
type restartBudget struct {
	max    int
	window time.Duration
	at     []time.Time // the restarts within window before the last take
}

// take reports whether one more restart at now stays within the budget,
// and counts it if so.
func (b *restartBudget) take(now time.Time) bool {
	kept := b.at[:0]
	for _, t := range b.at {
		if now.Sub(t) < b.window {
			kept = append(kept, t)
		}
	}
	b.at = kept
	if len(b.at) >= b.max {
		return false
	}
	b.at = append(b.at, now)
	return true
}

// restartsAfter reports whether a node that stopped on its own with err is
// started again in this process: its scrub found a corrupt batch.
func restartsAfter(err error) bool { return errors.Is(err, segment.ErrScrubCorrupt) }

// runNode starts the node and blocks until ctx ends (SIGINT/SIGTERM), then
// performs a controlled shutdown; a node that stopped on its own is shut
// down the same way and, after a scrub found corruption, started again
// (see above). Logs and a failed shutdown go to stderr.
func runNode(ctx context.Context, opts nodeOptions, stdout, stderr io.Writer) error {
	logger, err := newLogger(stderr, opts.logLevel, opts.logJSON, opts.cfg.ID)
	if err != nil {
		return err
	}
	opts.cfg.Logger = logger
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	budget := restartBudget{max: scrubRestartMax, window: scrubRestartWindow}
	for {
		n, err := startNode(context.Background(), opts.cfg)
		if err != nil {
			return err
		}
		opts.cfg.InProcessRestarts++ // the next start's count
		err = serveNode(ctx, n, hup, logger, stderr)
		if ctx.Err() != nil || !opts.scrubRestart || !restartsAfter(err) {
			return err
		}
		if !budget.take(time.Now()) {
			logger.Error(fmt.Sprintf("the scrub found corrupt batches %d times within %s: not starting the node again (check the disk and memory; a restart repairs the partition)", scrubRestartMax+1, scrubRestartWindow),
				"err", err)
			return err
		}
		logger.Warn("the scrub found a corrupt batch: starting the node again in this process, to truncate the partition there, set aside what follows and fetch it again from its leader",
			"err", err)
	}
}

// serveNode waits until ctx ends or n stops on its own, reloading TLS on
// SIGHUP, then shuts n down and returns the error it stopped with.
func serveNode(ctx context.Context, n runningNode, hup <-chan os.Signal, logger *slog.Logger, stderr io.Writer) error {
wait:
	for {
		select {
		case <-ctx.Done():
			break wait
		case <-n.Done():
			break wait
		case <-hup:
			reloadTLS(n, logger)
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	logger.Info("shutting down")
	if err := n.Shutdown(sctx); err != nil {
		fmt.Fprintf(stderr, "paymentlog: shutdown: %v\n", err)
	}
	return n.Err()
}
