package metadata

import "paymentlog/node/acl"

// ACL bindings (wire/acls.go) live in the image: the active controller
// decides a change into ACLsCreated or ACLsDeleted records, so every node
// applies the same bindings, without a restart, and they are in every
// snapshot.

// ACLs returns the ACL bindings (nil when none; a nil *acl.Set holds none).
func (m *Image) ACLs() *acl.Set { return m.acls }
