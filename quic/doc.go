// Package quic is paymentlog's transport: framed RPC over multiplexed QUIC
// streams (quic-go), one UDP socket per node, mutual TLS with a cluster CA.
//
// # Streams
//
// Every exchange is one bidirectional QUIC stream on a connection shared by
// all callers talking to the same address. The first frame on a stream selects
// the handler registered for its type:
//
//   - unary: the caller writes one request frame; the handler's single
//     response frame (or an error frame) comes back and the server closes its
//     send side; the caller closes its own side only after reading the whole
//     response, which tells the server the response was delivered (Shutdown
//     waits for that). See [Endpoint.Call].
//   - session: after the first frame both sides send frames until one closes
//     the session. See [Endpoint.OpenSession] and [Session].
//
// # Frame format (part of the wire format: never change)
//
//	+---------------------+---------+------------------------------+
//	| length: uint32, BE  | type: u8| body: msgpack, length-1 bytes|
//	+---------------------+---------+------------------------------+
//
// length counts the type byte and the body, so it is at least 1 and at most
// Config.MaxFrameSize (default 16 MiB); a larger length is rejected before
// anything is allocated. The body is one msgpack value. Frame types 0x00-0xEF
// belong to the application (package wire); 0xF0-0xFF are reserved for the
// transport. Two reserved types are in use. [FrameError] (0xFF), whose body
// is the msgpack map {"code": uint16, "msg": string}: it carries a handler's
// error back to the caller (Call returns it as *RemoteError) and tells a peer
// why its stream was rejected (unknown type, malformed or oversized frame,
// server shutting down, first-frame timeout). And the liveness probe (0xFE,
// body a padding bin8; answered with 0xFE, body nil) that an endpoint sends
// on its pooled connection to a peer that has just dialed it anew, to learn
// whether the peer restarted (see reconnect.go).
//
// # Hostile input
//
// A frame's body is allocated whole on the strength of its length prefix
// only within an endpoint's body budget (64 MiB of bodies still to arrive;
// see bodyBudget); beyond it a body grows only as its bytes arrive, so
// peers announcing 16 MiB frames and sending nothing cost at most the budget. [Frame.Decode] walks the msgpack bytes
// before decoding and rejects any string, binary, extension, array or map whose
// declared length does not fit in the bytes that follow (an array element needs
// at least one byte, a map entry two), more than MaxListItems list elements and
// map entries per frame, nesting deeper than 32, non-scalar map keys and
// trailing bytes. This makes msgpack/v5's broken slice-allocation guard
// (upstream issue #401: a 5-byte body can make it allocate ~800 MiB) harmless
// for every message type. Because decoding still turns each element into a
// whole Go value, the frames of one endpoint that decode 1024 elements or
// more share a budget of MaxListItems elements decoding at once. A stream
// whose first frame does not arrive within Config.FirstFrameTimeout is
// closed; a unary response or session frame its peer stops reading for
// Config.IdleTimeout (no bytes accepted while the connection stays alive) is
// abandoned with its stream canceled both ways (a session Send returns
// [ErrSendStalled]), and an answered stream keeps no request bytes while it
// waits for the caller's FIN.
//
// # Moving bulk bytes
//
// Record batches cross the transport with as few copies as the stream API
// allows. A byte-string field of at least [OutOfLineBytes] whose type uses
// the encoder's out-of-line hook (wire.Bytes; the hooks are the methods
// TakesOutOfLine/WriteOutOfLine of the msgpack encoder's writer and
// NextBytes of the decoder's input) is written to the
// stream from its own array instead of being copied into the frame buffer
// (a unary handler returns a [Reply] when its answer borrows memory, e.g.
// slices of a segment mapping, until the write ends), and
// [Frame.DecodeNoCopy] decodes such fields as slices of the frame body. A
// frame of at most 256 KiB is still handed to the stream in one write, its
// parts copied into one pooled buffer (join.go): every part boundary costs
// quic-go a short packet, a train and a parked writer, more than the copy.
// Concurrent Calls on one connection write request bodies of 64 KiB or
// more one at a time: interleaved packet by packet, every request would
// finish as late as the last one and the server's readers would wake once
// per packet.
//
// # The socket
//
// On Linux an endpoint's UDP socket has receive offload (UDP_GRO) on, and
// its sendmsg and recvmmsg are made with RawSyscall, without the Go
// scheduler's system-call hand-off (gro_linux.go, rawsyscall_linux.go);
// elsewhere, or where the kernel refuses GRO, quic-go uses the socket as
// is.
//
// # Error codes
//
// Stream cancellations carry a StreamCode*, connection closes a ConnCode*,
// error frames a Code*. All are part of the wire format.
//
// # TLS
//
// With TLSConfig.Dir set, servers require and verify client certificates
// signed by Dir/ca.crt and clients verify servers against it (mutual TLS).
// Without it (dev mode) the endpoint uses an ephemeral self-signed certificate
// and verifies nothing; it says so once, loudly, in the log. `paymentlog cert`
// creates the CA and the node and client certificates ([InitCA], [IssueCert]).
//
// # Authorization (Kafka's ClusterAction)
//
// Every certificate issued by `paymentlog cert issue` carries a role: a node
// certificate (`--node-id N`: OU "node", URI SAN paymentlog:node:N) or a
// client certificate (OU "client"); see [Role] for the exact format. The
// serving side reads it once per connection, at handshake, into
// [Peer].Role and [Peer].NodeID. Under mutual TLS an endpoint runs
// Config.Authorize (e.g. [NodeOnly] with the node-to-node frame types) on
// every stream's first frame before its handler: a refused stream gets an
// error frame with [CodeClusterAuthorizationFailed] (not retriable; the
// caller's error matches [ErrClusterAuthorizationFailed]), the first
// refusal on a connection is logged at warn, and the connection and every
// other peer are served as before. Where a request names the node it comes
// from, the handler binds it to the certificate with [Peer.CheckNodeID]
// (a refusal is told to Config.OnRefusedPeer, as [RefusedWrongNode]). A
// certificate without a role (issued by an older build) is a client as far
// as the authorizer is concerned. In dev mode nothing is authenticated, so
// nothing is authorized: every peer may send everything, as any node.
package quic
