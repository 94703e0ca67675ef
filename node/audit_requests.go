package node

import (
	"context"
	"reflect"
	"strings"

	"paymentlog/node/audit"
	"paymentlog/node/controller"
	"paymentlog/quic"
	"paymentlog/wire"
)

// auditedRequest is a request type the audit trail records: its name and a
// new value to decode it into.
type auditedRequest struct {
	op  string
	req func() any
}

// auditedRequests are the requests that change the cluster
// (node/audit's doc lists them), by frame type. OffsetCommit is recorded only
// when the request says it is an operator's (wire.OffsetCommitRequest.Audit):
// consumers commit every few seconds.
var auditedRequests = map[quic.FrameType]auditedRequest{
	wire.TypeCreateTopic:            {"CreateTopic", func() any { return new(wire.CreateTopicRequest) }},
	wire.TypeDeleteTopic:            {"DeleteTopic", func() any { return new(wire.DeleteTopicRequest) }},
	wire.TypeCreatePartitions:       {"CreatePartitions", func() any { return new(wire.CreatePartitionsRequest) }},
	wire.TypeReassignPartition:      {"ReassignPartition", func() any { return new(wire.ReassignPartitionRequest) }},
	wire.TypeAlterReplicationFactor: {"AlterReplicationFactor", func() any { return new(wire.AlterReplicationFactorRequest) }},
	wire.TypeAlterClusterConfigs:    {"AlterClusterConfigs", func() any { return new(wire.AlterClusterConfigsRequest) }},
	wire.TypeUnregisterBroker:       {"UnregisterBroker", func() any { return new(wire.UnregisterBrokerRequest) }},
	wire.TypeDeleteGroup:            {"DeleteGroup", func() any { return new(wire.DeleteGroupRequest) }},
	wire.TypeOffsetCommit:           {"OffsetCommit", func() any { return new(wire.OffsetCommitRequest) }},
	wire.TypeAlterConfigs:           {"AlterConfigs", func() any { return new(wire.AlterConfigsRequest) }},
	wire.TypeCreateACLs:             {"CreateACLs", func() any { return new(wire.CreateACLsRequest) }},
	wire.TypeDeleteACLs:             {"DeleteACLs", func() any { return new(wire.DeleteACLsRequest) }},
	wire.TypeAlterClientQuotas:      {"AlterClientQuotas", func() any { return new(wire.AlterClientQuotasRequest) }},
	wire.TypeDeleteRecords:          {"DeleteRecords", func() any { return new(wire.DeleteRecordsRequest) }},
}

// auditWho is the client a line is about.
func auditWho(p quic.Peer) audit.Who {
	return audit.Who{Principal: principalOf(p), Authenticated: p.Authenticated, Addr: p.Addr}
}

// audited wraps the handler of frame type t so that the audit trail records
// each request it answers, if t is one of auditedRequests; other handlers
// are returned as they are.
func (n *Node) audited(t quic.FrameType, h quic.UnaryHandler) quic.UnaryHandler {
	ar, ok := auditedRequests[t]
	if !ok {
		return h
	}
	return func(ctx context.Context, peer quic.Peer, f quic.Frame) (quic.FrameType, any, error) {
		rt, resp, err := h(ctx, peer, f)
		n.auditAnswer(ar, peer, f, resp, err)
		return rt, resp, err
	}
}

// auditAnswer records the answer resp (or the handler's err) to request f.
func (n *Node) auditAnswer(ar auditedRequest, peer quic.Peer, f quic.Frame, resp any, err error) {
	req := ar.req()
	if derr := f.Decode(req); derr != nil {
		n.audit.Admin(auditWho(peer), ar.op, nil, nil, audit.ResultMalformed, derr.Error())
		return
	}
	if c, ok := req.(*wire.OffsetCommitRequest); ok && !c.Audit {
		return
	}
	if err != nil {
		n.audit.Admin(auditWho(peer), ar.op, req, nil, audit.ResultError, err.Error())
		return
	}
	if r, ok := resp.(quic.Reply); ok {
		resp = r.Body
	}
	code, msg := answerError(resp)
	if code == wire.NotController && !strings.Contains(msg, controller.LostAfterProposing) {
		return // answered by the active controller, which records it
	}
	result := audit.ResultOK
	if code != wire.None {
		result = code.String()
	}
	n.audit.Admin(auditWho(peer), ar.op, req, resp, result, msg)
}

// answerError is the error an answer carries: its Err and Message fields,
// or for one answering per partition (Parts) the first partition's error.
func answerError(resp any) (wire.ErrorCode, string) {
	v := reflect.Indirect(reflect.ValueOf(resp))
	if v.Kind() != reflect.Struct {
		return wire.None, ""
	}
	if code, msg, ok := errFields(v); ok {
		return code, msg
	}
	if parts := v.FieldByName("Parts"); parts.Kind() == reflect.Slice {
		for i := range parts.Len() {
			p := reflect.Indirect(parts.Index(i))
			if p.Kind() != reflect.Struct {
				continue
			}
			if code, msg, ok := errFields(p); ok && code != wire.None {
				return code, msg
			}
		}
	}
	return wire.None, ""
}

// errFields reads a struct's Err (wire.ErrorCode) and Message fields.
func errFields(v reflect.Value) (wire.ErrorCode, string, bool) {
	e := v.FieldByName("Err")
	if !e.IsValid() || e.Type() != reflect.TypeFor[wire.ErrorCode]() {
		return 0, "", false
	}
	var msg string
	if m := v.FieldByName("Message"); m.IsValid() && m.Kind() == reflect.String {
		msg = m.String()
	}
	return wire.ErrorCode(e.Int()), msg, true
}
