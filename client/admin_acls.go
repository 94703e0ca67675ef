package client

import (
	"context"
	"fmt"
	"slices"

	"paymentlog/wire"
)

// Access control lists (wire/acls.go; Kafka's kafka-acls). Bindings are
// changed through the active controller, which keeps them in the metadata
// log; every node applies them from there without a restart, and a node
// started with --authorizer acl enforces them on every client request. A
// change returns once every node that answers has applied it, so the
// bindings it made are in force everywhere when it returns. Changing needs
// alter on the cluster, listing describe on the cluster (node and
// --super-users certificates may do everything).
//
// Refusals are errors matching (ErrorCode, or errors.As on *wire.Error)
// wire.ClusterAuthorizationFailed for a principal that may not do it,
// wire.InvalidRequest for an invalid binding (naming it), more than
// wire.MaxACLsPerRequest in one call or a cluster that would hold more
// than wire.MaxACLs, and wire.UnsupportedVersion while a registered node's
// build does not apply ACL records. NotController, Timeout and failed calls
// are retried until ctx ends.

// CreateACLs adds bindings (Kafka's CreateAcls), all or none, and returns
// how many of them did not exist before: bindings that exist already are
// kept, so a retry succeeds (after an attempt that may have been applied,
// its answer lost, created counts only what the last attempt added). Each
// binding is checked with wire.CheckACLBinding before anything is sent.
func (a *Admin) CreateACLs(ctx context.Context, bindings []wire.ACLBinding) (created int, err error) {
	if len(bindings) == 0 {
		return 0, nil
	}
	if len(bindings) > wire.MaxACLsPerRequest {
		return 0, wire.InvalidRequest.Err(fmt.Sprintf("%d bindings in one request, more than %d", len(bindings), wire.MaxACLsPerRequest))
	}
	for _, b := range bindings {
		if why := wire.CheckACLBinding(b); why != "" {
			return 0, wire.InvalidRequest.Err(fmt.Sprintf("binding %s: %s", b, why))
		}
	}
	req := &wire.CreateACLsRequest{ACLs: bindings}
	var resp wire.CreateACLsResponse
	_, err = a.toController(ctx, "create ACLs", wire.TypeCreateACLs, req,
		func() any { resp = wire.CreateACLsResponse{}; return &resp },
		func() (wire.ErrorCode, string) { return resp.Err, resp.Message })
	if err != nil {
		return 0, err
	}
	if err := a.waitMetadataOffset(ctx, resp.MetadataOffset); err != nil {
		return int(resp.Created), fmt.Errorf("client: ACLs created but not yet applied by every node: %w", err)
	}
	return int(resp.Created), nil
}

// DeleteACLs removes every binding one of filters selects (Kafka's
// DeleteAcls; the zero filter selects every binding, no filter none) and
// returns the bindings removed, sorted as DescribeACLs sorts them. Nothing
// matching is no error. After an attempt that may have been applied (its
// answer lost), the bindings it removed are not in the answer of the retry.
func (a *Admin) DeleteACLs(ctx context.Context, filters ...wire.ACLFilter) ([]wire.ACLBinding, error) {
	if len(filters) == 0 {
		return nil, nil
	}
	if len(filters) > wire.MaxACLsPerRequest {
		return nil, wire.InvalidRequest.Err(fmt.Sprintf("%d filters in one request, more than %d", len(filters), wire.MaxACLsPerRequest))
	}
	for _, f := range filters {
		if why := wire.CheckACLFilter(f); why != "" {
			return nil, wire.InvalidRequest.Err(why)
		}
	}
	req := &wire.DeleteACLsRequest{Filters: filters}
	var resp wire.DeleteACLsResponse
	_, err := a.toController(ctx, "delete ACLs", wire.TypeDeleteACLs, req,
		func() any { resp = wire.DeleteACLsResponse{}; return &resp },
		func() (wire.ErrorCode, string) { return resp.Err, resp.Message })
	if err != nil {
		return nil, err
	}
	if err := a.waitMetadataOffset(ctx, resp.MetadataOffset); err != nil {
		return resp.Deleted, fmt.Errorf("client: ACLs deleted but not yet applied by every node: %w", err)
	}
	return resp.Deleted, nil
}

// ACLList is what DescribeACLs read from one node.
type ACLList struct {
	// ACLs are the bindings the filter selected, sorted by resource type,
	// name, pattern type, principal, operation and permission.
	ACLs []wire.ACLBinding
	// Enforced says whether the answering node enforces ACLs (started
	// with --authorizer acl). Every node keeps the bindings; a node
	// started without it lets every client certificate do everything.
	Enforced bool
	// Node is the answering node's id, -1 when the client's metadata
	// does not name the address it asked (a bootstrap address written
	// another way); Addr is that address.
	Node int32
	Addr string
}

// DescribeACLs lists the bindings f selects (Kafka's DescribeAcls; the zero
// filter selects every binding), from one node's image: any node that
// answers (readAnyNode). A node that has not applied a
// change yet answers without it; the changes of this package have been
// applied by every node when they return.
func (a *Admin) DescribeACLs(ctx context.Context, f wire.ACLFilter) (ACLList, error) {
	if why := wire.CheckACLFilter(f); why != "" {
		return ACLList{}, wire.InvalidRequest.Err(why)
	}
	r, addr, err := readAnyNode(ctx, a, "describe ACLs", wire.TypeDescribeACLs, &wire.DescribeACLsRequest{Filter: f},
		func(r *wire.DescribeACLsResponse) (wire.ErrorCode, string) { return r.Err, r.Message })
	if err != nil {
		return ACLList{}, err
	}
	l := ACLList{ACLs: r.ACLs, Enforced: r.Enforced, Node: -1, Addr: addr}
	if l.ACLs == nil {
		l.ACLs = []wire.ACLBinding{}
	}
	if s := a.c.meta.current(); s != nil {
		for _, b := range s.brokers {
			if b.Addr == addr {
				l.Node = b.ID
			}
		}
	}
	return l, nil
}

// ACLEnforcement says which alive nodes enforce ACLs: --authorizer acl is
// each node's flag, and a node without it lets every client certificate do
// everything, so a cluster where only some nodes enforce is open through
// the others. Node ids sorted.
type ACLEnforcement struct {
	Enforcing, NotEnforcing, Unanswered []int32
}

// DescribeACLEnforcement asks every alive broker (once, at the same time)
// whether it enforces ACLs; needs describe on the cluster. A refusal
// (ClusterAuthorizationFailed) from every node that answered is an error.
func (a *Admin) DescribeACLEnforcement(ctx context.Context) (ACLEnforcement, error) {
	snap, err := a.c.meta.get(ctx)
	if err != nil {
		return ACLEnforcement{}, err
	}
	type answer struct {
		id  int32
		r   wire.DescribeACLsResponse
		err error
	}
	var brokers []wire.BrokerInfo
	for _, b := range snap.brokerList() {
		if b.State != "fenced" && b.Addr != "" {
			brokers = append(brokers, b)
		}
	}
	answers := make(chan answer, len(brokers))
	for _, b := range brokers {
		go func() {
			cctx, cancel := context.WithTimeout(ctx, a.c.cfg.RequestTimeout)
			defer cancel()
			var r wire.DescribeACLsResponse
			// No principal has an empty name: the filter selects nothing,
			// and the answer is only its Enforced.
			err := a.c.call(cctx, b.Addr, wire.TypeDescribeACLs, &wire.DescribeACLsRequest{Filter: wire.ACLFilter{Principal: wire.PrincipalPrefix}}, &r)
			answers <- answer{b.ID, r, err}
		}()
	}
	var e ACLEnforcement
	var refused error
	for range brokers {
		an := <-answers
		switch {
		case an.err != nil:
			e.Unanswered = append(e.Unanswered, an.id)
		case an.r.Err != wire.None:
			refused = an.r.Err.Err(an.r.Message)
			e.Unanswered = append(e.Unanswered, an.id)
		case an.r.Enforced:
			e.Enforcing = append(e.Enforcing, an.id)
		default:
			e.NotEnforcing = append(e.NotEnforcing, an.id)
		}
	}
	if refused != nil && len(e.Enforcing)+len(e.NotEnforcing) == 0 {
		return ACLEnforcement{}, fmt.Errorf("client: ACL enforcement: %w", refused)
	}
	for _, ids := range [][]int32{e.Enforcing, e.NotEnforcing, e.Unanswered} {
		slices.Sort(ids)
	}
	return e, nil
}
