package controller

import (
	"context"
	"sync"

	"paymentlog/node/metadata"
	"paymentlog/wire"
)

// CreateACLs adds ACL bindings once the record is committed (see
// metadata.DecideCreateACLs); Created counts those the committed decision
// added (0 for a retry of a committed request).
func (c *Controller) CreateACLs(ctx context.Context, req wire.CreateACLsRequest) wire.CreateACLsResponse {
	// The decision may run against a newer image than the request saw, or
	// again: what is answered is what the last run decided, which is what
	// was committed. The mutex orders the loop's write before the read.
	var mu sync.Mutex
	var created int
	img, err := c.submit(ctx, "create-acls", func(m *metadata.Image) ([]metadata.Record, error) {
		recs, n, err := metadata.DecideCreateACLs(m, req.ACLs)
		mu.Lock()
		created = n
		mu.Unlock()
		return recs, err
	})
	code, msg, hint := c.errorCode(err)
	r := wire.CreateACLsResponse{Err: code, Message: msg, ControllerID: hint}
	if img != nil {
		r.MetadataOffset = int64(img.Offset())
	}
	if err == nil {
		mu.Lock()
		r.Created = int32(created)
		mu.Unlock()
		c.log.Info("created ACL bindings", "asked", len(req.ACLs), "created", r.Created)
	}
	return r
}

// DeleteACLs removes every binding one of the request's filters selects
// once the record is committed (see metadata.DecideDeleteACLs); Deleted
// lists those the committed decision removed (empty when none matched).
func (c *Controller) DeleteACLs(ctx context.Context, req wire.DeleteACLsRequest) wire.DeleteACLsResponse {
	var mu sync.Mutex // as in CreateACLs
	var deleted []wire.ACLBinding
	img, err := c.submit(ctx, "delete-acls", func(m *metadata.Image) ([]metadata.Record, error) {
		recs, gone, err := metadata.DecideDeleteACLs(m, req.Filters)
		mu.Lock()
		deleted = gone
		mu.Unlock()
		return recs, err
	})
	code, msg, hint := c.errorCode(err)
	r := wire.DeleteACLsResponse{Err: code, Message: msg, ControllerID: hint}
	if img != nil {
		r.MetadataOffset = int64(img.Offset())
	}
	if err == nil {
		mu.Lock()
		r.Deleted = deleted
		mu.Unlock()
		if r.Deleted == nil {
			r.Deleted = []wire.ACLBinding{}
		}
		c.log.Info("deleted ACL bindings", "filters", len(req.Filters), "deleted", len(r.Deleted))
	}
	return r
}
