package node

import (
	"testing"

	"paymentlog/wire"
)

// answerError reads an answer's own error, else its first partition's, and
// anything else is no error.
func TestAnswerError(t *testing.T) {
	for _, c := range []struct {
		name string
		resp any
		code wire.ErrorCode
		msg  string
	}{
		{"ok", &wire.CreateTopicResponse{TopicID: "x"}, wire.None, ""},
		{"refused", &wire.AlterConfigsResponse{Err: wire.PolicyViolation, Message: "no"}, wire.PolicyViolation, "no"},
		{"by value", wire.DeleteGroupResponse{Err: wire.NonEmptyGroup, Message: "members"}, wire.NonEmptyGroup, "members"},
		{"partitions", &wire.DeleteRecordsResponse{Parts: []wire.DeleteRecordsPartitionResponse{
			{Partition: 0}, {Partition: 1, Err: wire.NotLeader, Message: "not here"}, {Partition: 2, Err: wire.Timeout}}}, wire.NotLeader, "not here"},
		{"partitions ok", &wire.DeleteRecordsResponse{Parts: []wire.DeleteRecordsPartitionResponse{{Partition: 0}}}, wire.None, ""},
		{"no error field", &struct{ X int }{1}, wire.None, ""},
		{"nil", nil, wire.None, ""},
	} {
		if code, msg := answerError(c.resp); code != c.code || msg != c.msg {
			t.Errorf("%s: %v %q, want %v %q", c.name, code, msg, c.code, c.msg)
		}
	}
}
