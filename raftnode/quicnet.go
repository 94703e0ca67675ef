package raftnode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
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
		return serveRaftSession(ctx, peer, first, s, h)
	})
}

// serveRaftSession hands every frame of an inbound raft stream to h, in order,
// until the stream ends, a frame's sender is not the peer's certificate (see
// checkSender) or h rejects a frame.
func serveRaftSession(ctx context.Context, peer quic.Peer, first quic.Frame, s *quic.Session, h inboundHandler) error {
	fr := first
	for {
		if fr.Type != FrameType {
			return fmt.Errorf("%w: frame type %d on a raft stream", errBadMessage, fr.Type)
		}
		var f raftFrame
		if err := fr.Decode(&f); err != nil {
			return err
		}
		if err := checkSender(peer, f.From); err != nil {
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

// checkSender binds a raft frame's sender to the peer's certificate: under
// mutual TLS only node N's certificate may send raft messages from N (every
// message in a frame has the frame's From: see checkMessage). Without it,
// any certificate the cluster CA signed could vote, append entries to the
// metadata log or claim leadership as any controller.
func checkSender(peer quic.Peer, from uint64) error {
	id := int32(from)
	if from > math.MaxInt32 {
		id = -1 // no node has it; dev mode still lets it through to checkMessage
	}
	return peer.CheckNodeID("raft sender", id)
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

// Send writes f on the session, opening one if there is none. A session
// whose connection has died since it was opened (typically: the peer
// restarted, and its first answer to our keepalive or the peer's own close
// ended the old connection) is replaced before the write instead of failing
// it: raft does not resend a lost vote, and a lost vote costs an election
// timeout. A write that fails on an older session is retried once on a new
// one for the same reason. (A frame written before the death is known, in
// the moment between a peer's restart and its reset reaching us, is lost.)
func (q *quicStream) Send(ctx context.Context, f *raftFrame) error {
	if s := q.session(); s != nil {
		select {
		case <-s.Done():
			q.Close()
		default:
			err := s.Send(ctx, FrameType, f)
			if err == nil || ctx.Err() != nil {
				return err
			}
			q.Close()
		}
	}
	s, err := q.ep.OpenSession(quic.ExpectNode(ctx, int32(f.To)), q.addr, FrameType, f)
	if err != nil {
		return err
	}
	q.mu.Lock()
	q.mu.s = s
	q.mu.Unlock()
	return nil
}

// session returns the current session (nil before the first Send).
func (q *quicStream) session() *quic.Session {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.mu.s
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
