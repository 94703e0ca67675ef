package client

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"paymentlog/wire"
)

// Client quotas (wire/quotas.go; Kafka's user quotas, kafka-configs
// --entity-type users): how many bytes per second one principal (or, for
// the default entity, Principal "", each principal without a quota of its
// own for that key) may produce to and fetch from each node. Quotas are
// changed through the active controller, which keeps them in the metadata
// log; every node applies them from there without a restart and holds back
// the Produce and Fetch answers of a principal over its rate (the answers
// carry ThrottleMs; ProducerStats counts them). A change returns once every
// node that answers has applied it. Changing needs alter on the cluster,
// listing describe on the cluster (under --authorizer acl).
//
// Refusals are errors matching (ErrorCode, or errors.As on *wire.Error)
// wire.ClusterAuthorizationFailed for a principal that may not do it,
// wire.InvalidRequest for an invalid entry (naming it), an entity named
// twice, more than wire.MaxACLsPerRequest entries or a cluster that would
// hold more than wire.MaxQuotaEntities entities, and wire.UnsupportedVersion
// while a registered node's build does not apply quota records.
// NotController, Timeout and failed calls are retried until ctx ends.

// AlterClientQuotas changes the quotas of the entries' entities, all or
// none: each entry's Set keys are set, its Delete keys removed (the entity
// then has the default's, if any). Each entry is checked with
// wire.CheckQuotaEntry before anything is sent. A change that changes
// nothing (deleting a key not set, setting a value already set) succeeds,
// so a retry does.
func (a *Admin) AlterClientQuotas(ctx context.Context, entries ...wire.QuotaEntry) error {
	if len(entries) == 0 {
		return nil
	}
	if len(entries) > wire.MaxACLsPerRequest {
		return wire.InvalidRequest.Err(fmt.Sprintf("%d quota entries in one request, more than %d", len(entries), wire.MaxACLsPerRequest))
	}
	seen := make(map[string]bool, len(entries))
	for _, e := range entries {
		if why := wire.CheckQuotaEntry(e); why != "" {
			if !strings.Contains(why, wire.QuotaEntityName(e.Principal)) {
				why = fmt.Sprintf("quota of %s: %s", wire.QuotaEntityName(e.Principal), why)
			}
			return wire.InvalidRequest.Err(why)
		}
		if seen[e.Principal] {
			return wire.InvalidRequest.Err(fmt.Sprintf("quota of %s: named twice in one request", wire.QuotaEntityName(e.Principal)))
		}
		seen[e.Principal] = true
	}
	req := &wire.AlterClientQuotasRequest{Entries: entries}
	var resp wire.AlterClientQuotasResponse
	_, err := a.toController(ctx, "alter client quotas", wire.TypeAlterClientQuotas, req,
		func() any { resp = wire.AlterClientQuotasResponse{}; return &resp },
		func() (wire.ErrorCode, string) { return resp.Err, resp.Message })
	if err != nil {
		return err
	}
	if err := a.waitMetadataOffset(ctx, resp.MetadataOffset); err != nil {
		return fmt.Errorf("client: client quotas changed but not yet applied by every node: %w", err)
	}
	return nil
}

// DescribeClientQuotas lists every entity with a quota, the default
// (Principal "") first, then by principal; an empty, non-nil list when
// there are none. It reads one node's image: any node that answers
// (readAnyNode). A node that has not applied a change yet
// answers without it; AlterClientQuotas returns once every node has.
func (a *Admin) DescribeClientQuotas(ctx context.Context) ([]wire.ClientQuota, error) {
	r, _, err := readAnyNode(ctx, a, "describe client quotas", wire.TypeDescribeClientQuotas, &wire.DescribeClientQuotasRequest{},
		func(r *wire.DescribeClientQuotasResponse) (wire.ErrorCode, string) { return r.Err, r.Message })
	if err != nil {
		return nil, err
	}
	qs := r.Quotas
	if qs == nil {
		qs = []wire.ClientQuota{}
	}
	// The node's order; sorted here too so that callers may rely on it.
	slices.SortStableFunc(qs, func(x, y wire.ClientQuota) int { return strings.Compare(x.Principal, y.Principal) })
	return qs, nil
}
