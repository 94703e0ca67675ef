package raftnode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"paymentlog/quic"
)

// quicNetwork carries raft frames on quic session streams of the node's
// shared endpoint: one long-lived stream per peer and direction, opened by the
// sender, whose every frame (the first included) is a raftFrame of type
// FrameType. The receiver never answers on the stream; raft's own responses
// travel on the receiver's stream towards the sender.
type quicNetwork struct {
	ep *quic.Endpoint
	lg *slog.Logger
}

func (q *quicNetwork) Dial(_ context.Context, addr string) (outStream, error) {
	return &quicStream{ep: q.ep, addr: addr}, nil
}

func (q *quicNetwork) Listen(h inboundHandler) {
	q.ep.HandleSession(FrameType, func(ctx context.Context, peer quic.Peer, first quic.Frame, s *quic.Session) error {
		return serveRaftSession(ctx, first, s, h)
	})
}

// serveRaftSession hands every frame of an inbound raft stream to h, in order,
// until the stream ends or h rejects a frame.
func serveRaftSession(ctx context.Context, first quic.Frame, s *quic.Session, h inboundHandler) error {
	fr := first
	for {
		if fr.Type != FrameType {
			return fmt.Errorf("%w: frame type %d on a raft stream", errBadMessage, fr.Type)
		}
		var f raftFrame
		if err := fr.Decode(&f); err != nil {
			return err
		}
		if err := h(ctx, &f, nil); err != nil {
			return err
		}
		var err error
		if fr, err = s.Recv(ctx); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// quicStream opens its session on the first Send (the opening frame must
// carry data: a quic stream is visible to the peer only once written).
type quicStream struct {
	ep   *quic.Endpoint
	addr string

	mu struct {
		sync.Mutex
		s *quic.Session
	}
}

func (q *quicStream) Send(ctx context.Context, f *raftFrame) error {
	q.mu.Lock()
	s := q.mu.s
	q.mu.Unlock()
	if s != nil {
		return s.Send(ctx, FrameType, f)
	}
	s, err := q.ep.OpenSession(ctx, q.addr, FrameType, f)
	if err != nil {
		return err
	}
	q.mu.Lock()
	q.mu.s = s
	q.mu.Unlock()
	return nil
}

func (q *quicStream) Close() error {
	q.mu.Lock()
	s := q.mu.s
	q.mu.s = nil
	q.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.Close()
}
