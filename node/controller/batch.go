package controller

import (
	"context"
	"errors"
	"fmt"
	"math"

	"paymentlog/node/metadata"
	"paymentlog/wire"
)

// ErrNotController is wrapped by *NotControllerError.
var ErrNotController = errors.New("controller: not the active controller")

// NotControllerError carries the raft leader as a hint (-1 if unknown).
// Proposed: this node had proposed the request's records when it lost the
// role, so the next controller may still commit them.
type NotControllerError struct {
	Leader   int32
	Proposed bool
}

// LostAfterProposing is in the message of a NotControllerError with
// Proposed (the node's audit trail records such an answer).
const LostAfterProposing = "lost the role after proposing the change, which may still commit"

func (e *NotControllerError) Error() string {
	if e.Proposed {
		return fmt.Sprintf("controller: not the active controller (leader hint %d): %s", e.Leader, LostAfterProposing)
	}
	return fmt.Sprintf("controller: not the active controller (leader hint %d)", e.Leader)
}
func (e *NotControllerError) Unwrap() error { return ErrNotController }

func (c *Controller) notController() error { return &NotControllerError{Leader: c.leaderHint()} }

// leaderHint is the raft leader's id, or -1.
func (c *Controller) leaderHint() int32 {
	st := c.cfg.Raft.Status()
	if st.Leader == 0 || st.Leader > math.MaxInt32 {
		return -1
	}
	return int32(st.Leader)
}

// specOffset is the offset at which decisions of a batch are applied to the
// speculative image: beyond any real offset, so a broker registered or fenced
// earlier in the same batch cannot look caught up.
const specOffset = math.MaxUint64 / 2

// request is one decision waiting for the loop.
type request struct {
	kind   string
	decide func(*metadata.Image) ([]metadata.Record, error)
	done   chan result // buffered 1; nil for the loop's own requests
}

type result struct {
	img *metadata.Image // the image after the request's entry was applied
	err error
}

func (r *request) finish(img *metadata.Image, err error) {
	if r.done != nil {
		r.done <- result{img, err}
	}
}

// submit queues a decision and waits for its outcome.
func (c *Controller) submit(ctx context.Context, kind string, decide func(*metadata.Image) ([]metadata.Record, error)) (*metadata.Image, error) {
	if !c.active() {
		return nil, c.notController()
	}
	r := &request{kind: kind, decide: decide, done: make(chan result, 1)}
	select {
	case c.reqs <- r:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.stopped:
		return nil, c.notController()
	}
	select {
	case res := <-r.done:
		return res.img, res.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.stopped:
		return nil, c.notController()
	}
}

// handleBatch decides first and whatever else is queued; loop only.
func (c *Controller) handleBatch(ctx context.Context, first *request) {
	reqs := []*request{first}
drain:
	for len(reqs) < maxBatch {
		select {
		case r := <-c.reqs:
			reqs = append(reqs, r)
		default:
			break drain
		}
	}
	if !c.checkLeadership(ctx) {
		err := c.notController()
		for _, r := range reqs {
			r.finish(nil, err)
		}
		return
	}
	c.decideAndPropose(ctx, reqs)
}

// decideAndPropose decides reqs in order against a speculative image, each
// seeing the records of those before it, proposes all records as one entry
// and answers every request once the entry is applied locally; loop only.
func (c *Controller) decideAndPropose(ctx context.Context, reqs []*request) {
	base := c.cfg.Store.Image()
	spec := base
	var all []metadata.Record
	var waiting []*request
	for _, r := range reqs {
		recs, err := r.decide(spec)
		if err != nil {
			r.finish(spec, err)
			continue
		}
		if len(recs) > 0 {
			next, _, aerr := spec.ApplyEntry(specOffset, recs)
			if aerr != nil { // a decision that does not apply is our bug
				c.log.Error("controller decision produced rejected records", "request", r.kind, "err", aerr)
				r.finish(nil, &wire.Error{Code: wire.Unknown, Message: "controller: internal error"})
				continue
			}
			spec = next
			all = append(all, recs...)
		}
		waiting = append(waiting, r)
	}
	if len(all) == 0 {
		for _, r := range waiting {
			r.finish(base, nil)
		}
		return
	}
	// Every entry starts with this controller's marker: an entry decided by a
	// controller that has since been replaced (paused, then resumed still
	// believing it leads) carries an older term and is rejected whole on
	// apply, on every node alike (metadata.Image.ApplyEntry is atomic).
	c.mu.Lock()
	term := c.mu.activeTerm
	c.mu.Unlock()
	marker := metadata.ControllerMarker{ControllerID: c.cfg.NodeID, Term: term}
	data, err := metadata.EncodeEntry(append([]metadata.Record{marker}, all...)...)
	if err != nil {
		c.log.Error("controller cannot encode records", "err", err)
		for _, r := range waiting {
			r.finish(nil, &wire.Error{Code: wire.Unknown, Message: "controller: internal error"})
		}
		return
	}
	// raft forwards a follower's proposal to the leader: make sure this node
	// still leads before proposing what it decided (records are conditional,
	// so one that slips through a lost race is harmless, but rarer is better).
	var idx uint64
	var img *metadata.Image
	mayCommit := false // the records may be in the log without this node seeing them applied
	if !c.active() {
		err = c.notController()
	} else {
		pctx, cancel := context.WithTimeout(ctx, c.cfg.ProposeTimeout)
		proposed := commitClock()
		idx, err = c.cfg.Raft.Propose(pctx, data)
		cancel()
		// Only a proposal handed to raft whose wait ended may be in its
		// log; a refused one (dropped, not leader, closed) is not.
		mayCommit = err == nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
		if err == nil {
			if img, err = c.waitApplied(ctx, idx); err == nil {
				c.commitLatency.Since(proposed)
			}
		}
	}
	if err == nil && (img.ControllerID() != c.cfg.NodeID || img.ControllerTerm() != term) {
		// Committed, but rejected on apply: another controller took over.
		mayCommit = false
		err = fmt.Errorf("controller: entry at %d rejected: controller %d (term %d) took over",
			idx, img.ControllerID(), img.ControllerTerm())
	}
	if err != nil {
		c.log.Warn("controller proposal failed", "records", len(all), "err", err)
		// Whether or not it commits later, this node stops deciding until it
		// has a fresh marker: the next check re-activates if still leader.
		c.deactivate("proposal failed: " + err.Error())
		// NotController is retriable: the requester retries against
		// whichever node leads next, which decides from the applied state.
		nc := &NotControllerError{Leader: c.leaderHint(), Proposed: mayCommit}
		for _, r := range waiting {
			r.finish(nil, nc)
		}
		return
	}
	c.logRecords(idx, all)
	for _, r := range waiting {
		r.finish(img, nil)
	}
}

// logRecords logs what a committed entry decided.
func (c *Controller) logRecords(idx uint64, recs []metadata.Record) {
	for _, r := range recs {
		switch r := r.(type) {
		case metadata.PartitionChange, metadata.PartitionCreated, metadata.ProducerIDBlock, metadata.GroupOffsetsCommitted:
			c.log.Debug("controller committed", "offset", idx, "record", metadata.FormatRecord(r))
		default:
			c.log.Info("controller committed", "offset", idx, "record", metadata.FormatRecord(r))
		}
	}
}
