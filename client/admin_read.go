package client

import (
	"context"
	"errors"
	"fmt"

	"paymentlog/quic"
	"paymentlog/wire"
)

// readAnyNode sends a read-only admin request to any node that answers
// (hedged, as DescribeCluster), for answers every node holds alike (its
// image's ACLs, quotas): a retriable code is asked of another node; a
// refusal (an unauthorized principal, a bad request) is every node's
// answer and is returned. code reads the answer's error code and message.
// It returns the answer and the address of the node that gave it.
func readAnyNode[R any](ctx context.Context, a *Admin, what string, t quic.FrameType, req any,
	code func(*R) (wire.ErrorCode, string)) (*R, string, error) {
	ctx, cancel := context.WithTimeout(ctx, a.c.cfg.RequestTimeout)
	defer cancel()
	_, _ = a.c.meta.get(ctx) // the brokers' addresses beyond the bootstrap ones; failures show in the calls
	r, addr, err := hedged(ctx, a.c.meta.candidates(), a.c.cfg.HedgeDelay, func(ctx context.Context, addr string) (*R, error) {
		r := new(R)
		if err := a.c.call(ctx, addr, t, req, r); err != nil {
			if errors.Is(err, quic.ErrUnknownType) {
				return nil, fmt.Errorf("the node does not know this request: its build is older than this client's: %w", err)
			}
			return nil, err
		}
		if c, msg := code(r); c.Retriable() {
			return nil, c.Err(msg) // another node may answer
		}
		return r, nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("client: %s: %w", what, err)
	}
	if c, msg := code(r); c != wire.None {
		return nil, addr, c.Err(msg)
	}
	return r, addr, nil
}
