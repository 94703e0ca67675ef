package quic_test

import (
	"context"
	"fmt"
	"io"
	"log"

	"paymentlog/quic"
)

type ping struct {
	Seq int64 `msgpack:"seq"`
}

// A node serves handlers and calls peers through the same endpoint.
func ExampleEndpoint() {
	ctx := context.Background()
	ep, err := quic.New(ctx, quic.Config{Addr: "127.0.0.1:0"}) // TLS: dev mode
	if err != nil {
		log.Fatal(err)
	}
	defer ep.Close()

	const typePing, typeStream quic.FrameType = 1, 2
	ep.Handle(typePing, func(ctx context.Context, p quic.Peer, req quic.Frame) (quic.FrameType, any, error) {
		var m ping
		if err := req.Decode(&m); err != nil {
			return 0, nil, err // reaches the caller as *quic.RemoteError
		}
		return typePing, ping{Seq: m.Seq + 1}, nil
	})
	ep.HandleSession(typeStream, func(ctx context.Context, p quic.Peer, first quic.Frame, s *quic.Session) error {
		for {
			f, err := s.Recv(ctx)
			if err == io.EOF {
				return nil // the caller closed the session
			}
			if err != nil {
				return err
			}
			if err := s.Send(ctx, f.Type, quic.Raw(f.Body)); err != nil {
				return err
			}
		}
	})
	go ep.Serve(ctx)

	var resp ping
	if err := ep.Call(ctx, ep.Addr(), typePing, ping{Seq: 1}, &resp); err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Seq)

	s, err := ep.OpenSession(ctx, ep.Addr(), typeStream, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	if err := s.Send(ctx, typeStream, ping{Seq: 7}); err != nil {
		log.Fatal(err)
	}
	f, err := s.Recv(ctx)
	if err != nil {
		log.Fatal(err)
	}
	var echoed ping
	if err := f.Decode(&echoed); err != nil {
		log.Fatal(err)
	}
	fmt.Println(echoed.Seq)
	// Output:
	// 2
	// 7
}
