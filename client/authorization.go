package client

import (
	"context"
	"fmt"

	"paymentlog/wire"
)

// Authorization. A cluster whose nodes run with --authorizer acl refuses
// what the client's principal (its certificate's common name) may not do
// with wire.TopicAuthorizationFailed, wire.GroupAuthorizationFailed or
// wire.ClusterAuthorizationFailed (wire/acls.go). None is retriable (the
// answer stays the same until an ACL changes), so each fails what asked:
// a Produce's delivery (a *DeliveryError wrapping the *wire.Error), a
// consumer's Poll, a group consumer's heartbeats, an admin call, the
// producer id an idempotent producer asks for first. Match them with
// ErrorCode or errors.As on *wire.Error; their messages name the
// principal, the operation and the resource.
//
// A topic the principal may not describe is left out of the metadata the
// client reads (it asks for every topic): where a topic the client looks
// for is missing (PartitionCount, Produce, DescribeTopic, an assigned
// topic in Poll), it asks for it by name, and the node's refusal tells
// "not allowed" from "does not exist" (missingTopic).

// missingTopic is the error for a topic the client's metadata does not
// list: wire.TopicAuthorizationFailed when a node asked for it by name
// refuses to describe it, else wire.UnknownTopicOrPartition.
func (c *Client) missingTopic(ctx context.Context, topic string) error {
	notFound := wire.UnknownTopicOrPartition.Err(fmt.Sprintf("topic %q does not exist", topic))
	if ctx.Err() != nil {
		return notFound
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	r, _, err := hedged(ctx, c.meta.candidates(), c.cfg.HedgeDelay, func(ctx context.Context, addr string) (*wire.MetadataResponse, error) {
		var r wire.MetadataResponse
		if err := c.call(ctx, addr, wire.TypeMetadata, &wire.MetadataRequest{Topics: []string{topic}}, &r); err != nil {
			return nil, err
		}
		if r.Err != wire.None {
			return nil, r.Err.Err(r.Message)
		}
		return &r, nil
	})
	if err != nil {
		return notFound
	}
	for _, t := range r.Topics {
		if t.Name == topic && t.Err == wire.TopicAuthorizationFailed {
			return wire.TopicAuthorizationFailed.Err(fmt.Sprintf("topic %q: this client's principal may not describe it (no ACL allows it)", topic))
		}
	}
	return notFound
}
