package client

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"paymentlog/client/clienttest"
	"paymentlog/quic"
	"paymentlog/wire"
)

// refuseAll makes fc refuse every request of the given types with code,
// and counts them.
func refuseAll(fc *clienttest.Cluster, code wire.ErrorCode, types ...quic.FrameType) *atomic.Int64 {
	var reqs atomic.Int64
	fc.SetIntercept(func(_ string, ty quic.FrameType, _ any) clienttest.Action {
		if slices.Contains(types, ty) {
			reqs.Add(1)
			return clienttest.Action{Kind: clienttest.Refuse, Code: code}
		}
		return clienttest.Action{}
	})
	return &reqs
}

// wantFailedFast fails the test unless err is the fake node's refusal with
// code, returned before ctx ended (no retry until then).
func wantFailedFast(t *testing.T, ctx context.Context, what string, err error, code wire.ErrorCode) {
	t.Helper()
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != code || !strings.Contains(err.Error(), code.String()+": refused by clienttest") {
		t.Fatalf("%s: %v, want %v with the node's message", what, err, code)
	}
	if ctx.Err() != nil {
		t.Fatalf("%s: retried until the context ended", what)
	}
}

// wantUnknownType fails the test unless err says the node's build does not
// know the request, returned before ctx ended.
func wantUnknownType(t *testing.T, ctx context.Context, what string, err error) {
	t.Helper()
	if !errors.Is(err, quic.ErrUnknownType) || !strings.Contains(err.Error(), "does not know this request") || ctx.Err() != nil {
		t.Fatalf("%s against an old build: %v (ctx %v)", what, err, ctx.Err())
	}
}

// unknownTypes answers requests of the given types as a node of a build
// without them does.
type unknownTypes struct {
	*clienttest.Cluster
	types []quic.FrameType
}

func (u unknownTypes) Call(ctx context.Context, addr string, t quic.FrameType, req, resp any) error {
	if slices.Contains(u.types, t) {
		return &quic.OpError{Op: "call", Addr: addr, Err: &quic.RemoteError{Addr: addr, Code: quic.CodeUnknownType, Message: "unknown frame type"}}
	}
	return u.Cluster.Call(ctx, addr, t, req, resp)
}
