package wire

import (
	"fmt"
	"net/netip"
	"strings"
	"unicode"
)

// Access control lists (Kafka's ACLs, kafka-acls.sh). A binding allows or
// denies one principal one operation on the resources one pattern names.
// The bindings live in the metadata log (every node applies them without a
// restart); a node started with --authorizer acl enforces them on every
// client request (see node/acl for the rules and DESIGN-CHANGES.md for
// which operation each request needs). Node certificates and the nodes'
// --super-users are allowed everything.

// Frame types of the ACL requests. Part of the wire format: never renumber.
const (
	TypeCreateACLs   = 29
	TypeDeleteACLs   = 30
	TypeDescribeACLs = 31
)

// Resource types.
const (
	ResourceTopic   = "topic"
	ResourceGroup   = "group"
	ResourceCluster = "cluster"
)

// ClusterResourceName is the name of the one cluster resource.
const ClusterResourceName = "cluster"

// Pattern types: a literal pattern names one resource ("*" names every
// resource of its type), a prefixed one every resource whose name starts
// with it.
const (
	PatternLiteral  = "literal"
	PatternPrefixed = "prefixed"
)

// Wildcards: the literal name of every resource, the principal of every
// client.
const (
	WildcardResource  = "*"
	WildcardPrincipal = "User:*"
)

// PrincipalPrefix starts every principal: "User:" followed by the common
// name of the client's certificate (`paymentlog cert issue --name NAME`).
const PrincipalPrefix = "User:"

// Operations. OpAll is every operation; read, write, delete and alter
// each imply describe (as in Kafka).
const (
	OpAll      = "all"
	OpRead     = "read"
	OpWrite    = "write"
	OpCreate   = "create"
	OpDelete   = "delete"
	OpAlter    = "alter"
	OpDescribe = "describe"
)

// Permissions. A deny binding that matches wins over any allow.
const (
	PermissionAllow = "allow"
	PermissionDeny  = "deny"
)

// Limits.
const (
	// MaxACLs is how many bindings a cluster holds.
	MaxACLs = 10_000
	// MaxACLsPerRequest bounds a CreateACLs request's bindings and a
	// DeleteACLs request's filters.
	MaxACLsPerRequest = 1_000
	// MaxPrincipalLen bounds a principal, "User:" included.
	MaxPrincipalLen = 256
)

// OperationsOf lists the operations a resource type has, OpAll first.
func OperationsOf(resourceType string) []string {
	switch resourceType {
	case ResourceTopic:
		return []string{OpAll, OpRead, OpWrite, OpCreate, OpDelete, OpAlter, OpDescribe}
	case ResourceGroup:
		return []string{OpAll, OpRead, OpDelete, OpDescribe}
	case ResourceCluster:
		return []string{OpAll, OpCreate, OpAlter, OpDescribe}
	}
	return nil
}

// ACLBinding is one access control entry. Every field but Host is
// required; field tags are part of the wire and metadata log formats.
type ACLBinding struct {
	// Principal is "User:NAME" (NAME: a client certificate's common name)
	// or WildcardPrincipal.
	Principal    string `msgpack:"pr"`
	ResourceType string `msgpack:"rt"`
	PatternType  string `msgpack:"pt"`
	// Name is the resource name or prefix (ClusterResourceName for the
	// cluster, literal only).
	Name       string `msgpack:"n"`
	Operation  string `msgpack:"op"`
	Permission string `msgpack:"pm"`
	// Host limits the binding to clients connecting from an address (Kafka's
	// --allow-host/--deny-host): an IP address, or a network in CIDR
	// notation ("10.1.0.0/16"), both in canonical form (CheckACLHost);
	// "" for every host (Kafka's "*"). Bindings with a host need metadata
	// version 8.
	Host string `msgpack:"h,omitempty"`
}

func (b ACLBinding) String() string {
	s := fmt.Sprintf("%s %s %s %s %s:%s", b.Permission, b.Principal, b.Operation, b.ResourceType, b.PatternType, b.Name)
	if b.Host != "" {
		s += " from " + b.Host
	}
	return s
}

// CheckACLHost says why h is not a binding's host ("" when it is): "",
// an IP address or a CIDR network, canonical (netip's own spelling, the
// network's address with its host bits zero), so that one host has one
// spelling and a binding one identity.
func CheckACLHost(h string) string {
	if h == "" {
		return ""
	}
	if len(h) > 64 {
		return "host longer than 64 bytes"
	}
	if strings.Contains(h, "/") {
		p, err := netip.ParsePrefix(h)
		switch {
		case err != nil:
			return fmt.Sprintf("host %.64q: not an IP address or CIDR network", h)
		case p.Masked().String() != h:
			return fmt.Sprintf("host %.64q: write the network as %s", h, p.Masked())
		}
		return ""
	}
	a, err := netip.ParseAddr(h)
	switch {
	case err != nil:
		return fmt.Sprintf("host %.64q: not an IP address or CIDR network", h)
	case a.Zone() != "":
		return fmt.Sprintf("host %.64q: no zone allowed", h)
	case a.String() != h:
		return fmt.Sprintf("host %.64q: write it as %s", h, a)
	}
	return ""
}

// CheckACLBinding says why b is not a valid binding ("" when it is).
func CheckACLBinding(b ACLBinding) string {
	if why := CheckPrincipal(b.Principal); why != "" {
		return why
	}
	ops := OperationsOf(b.ResourceType)
	if ops == nil {
		return fmt.Sprintf("resource type %.32q: want %s, %s or %s", b.ResourceType, ResourceTopic, ResourceGroup, ResourceCluster)
	}
	if !contains(ops, b.Operation) {
		return fmt.Sprintf("operation %.32q on a %s: want one of %s", b.Operation, b.ResourceType, strings.Join(ops, ", "))
	}
	if b.Permission != PermissionAllow && b.Permission != PermissionDeny {
		return fmt.Sprintf("permission %.32q: want %s or %s", b.Permission, PermissionAllow, PermissionDeny)
	}
	if b.PatternType != PatternLiteral && b.PatternType != PatternPrefixed {
		return fmt.Sprintf("pattern type %.32q: want %s or %s", b.PatternType, PatternLiteral, PatternPrefixed)
	}
	if why := CheckACLHost(b.Host); why != "" {
		return why
	}
	return checkResourceName(b.ResourceType, b.PatternType, b.Name)
}

// CheckPrincipal says why p is not a valid principal ("" when it is).
func CheckPrincipal(p string) string {
	name, ok := strings.CutPrefix(p, PrincipalPrefix)
	switch {
	case !ok:
		return fmt.Sprintf("principal %.64q: want %sNAME (NAME: a client certificate's common name) or %s", p, PrincipalPrefix, WildcardPrincipal)
	case name == "":
		return "principal: empty name after " + PrincipalPrefix
	case len(p) > MaxPrincipalLen:
		return fmt.Sprintf("principal longer than %d bytes", MaxPrincipalLen)
	}
	for _, r := range name {
		if !unicode.IsPrint(r) {
			return fmt.Sprintf("principal %.64q: unprintable character", p)
		}
	}
	return ""
}

// checkResourceName checks a binding's resource name for its type and
// pattern type.
func checkResourceName(resourceType, patternType, name string) string {
	if resourceType == ResourceCluster {
		if patternType != PatternLiteral || name != ClusterResourceName {
			return fmt.Sprintf("the cluster resource is %s:%s", PatternLiteral, ClusterResourceName)
		}
		return ""
	}
	if name == WildcardResource {
		if patternType != PatternLiteral {
			return fmt.Sprintf("%q is a literal name (every %s)", WildcardResource, resourceType)
		}
		return ""
	}
	if name == "" {
		return fmt.Sprintf("empty %s name", resourceType)
	}
	if resourceType == ResourceGroup {
		if why := CheckGroupName(name); why != "" {
			return why
		}
		return ""
	}
	if len(name) > MaxTopicNameLen {
		return fmt.Sprintf("topic name longer than %d bytes", MaxTopicNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Sprintf("topic name %.64q: only letters, digits, '.', '_' and '-'", name)
		}
	}
	return ""
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// ACLFilter selects bindings: each non-empty field must equal the
// binding's (so the zero filter selects every binding). Name is compared
// as written: a filter for topic "payments" selects the bindings written
// for "payments", not a prefixed one that covers it.
type ACLFilter struct {
	Principal    string `msgpack:"pr,omitempty"`
	ResourceType string `msgpack:"rt,omitempty"`
	PatternType  string `msgpack:"pt,omitempty"`
	Name         string `msgpack:"n,omitempty"`
	Operation    string `msgpack:"op,omitempty"`
	Permission   string `msgpack:"pm,omitempty"`
	// Host selects bindings with that host; AnyHostFilter the bindings for
	// every host (Host ""); "" selects any.
	Host string `msgpack:"h,omitempty"`
}

// AnyHostFilter is the ACLFilter.Host that selects the bindings without a
// host (Kafka's host "*").
const AnyHostFilter = "*"

// Matches reports whether f selects b.
func (f ACLFilter) Matches(b ACLBinding) bool {
	eq := func(f, b string) bool { return f == "" || f == b }
	host := b.Host
	if host == "" {
		host = AnyHostFilter
	}
	return eq(f.Principal, b.Principal) && eq(f.ResourceType, b.ResourceType) && eq(f.PatternType, b.PatternType) &&
		eq(f.Name, b.Name) && eq(f.Operation, b.Operation) && eq(f.Permission, b.Permission) && eq(f.Host, host)
}

// CheckACLFilter bounds a filter's fields (each at most MaxPrincipalLen
// bytes; values are compared, not validated).
func CheckACLFilter(f ACLFilter) string {
	for _, s := range []string{f.Principal, f.ResourceType, f.PatternType, f.Name, f.Operation, f.Permission, f.Host} {
		if len(s) > MaxPrincipalLen {
			return fmt.Sprintf("filter field longer than %d bytes", MaxPrincipalLen)
		}
	}
	return ""
}

// CreateACLsRequest (frame type 29) adds bindings; it may be sent to any
// node (NotController with the hint from one that is not the active
// controller). Needs alter on the cluster. Refused whole with
// InvalidRequest for an invalid binding (naming it) or more than
// MaxACLsPerRequest, and with InvalidRequest when the cluster would hold
// more than MaxACLs. Bindings that exist already are
// kept (a retry succeeds); UnsupportedVersion while a registered broker's
// build does not apply ACL records.
type CreateACLsRequest struct {
	ACLs []ACLBinding `msgpack:"acls"`
}

// CreateACLsResponse answers once the bindings are committed; Created is
// how many did not exist before.
type CreateACLsResponse struct {
	Err            ErrorCode `msgpack:"err"`
	Message        string    `msgpack:"msg"`
	Created        int32     `msgpack:"created"`
	MetadataOffset int64     `msgpack:"moff"`
	ControllerID   int32     `msgpack:"ctrl"` // with NotController: the active controller, -1 if unknown
}

// DeleteACLsRequest (frame type 30) removes every binding one of Filters
// selects (an empty filter selects all of them). Needs alter on the
// cluster.
type DeleteACLsRequest struct {
	Filters []ACLFilter `msgpack:"filters"`
}

// DeleteACLsResponse answers once the removal is committed, with the
// bindings removed (none: nothing matched, not an error).
type DeleteACLsResponse struct {
	Err            ErrorCode    `msgpack:"err"`
	Message        string       `msgpack:"msg"`
	Deleted        []ACLBinding `msgpack:"deleted"`
	MetadataOffset int64        `msgpack:"moff"`
	ControllerID   int32        `msgpack:"ctrl"`
}

// DescribeACLsRequest (frame type 31) lists the bindings Filter selects,
// from the answering node's image. Needs describe on the cluster.
type DescribeACLsRequest struct {
	Filter ACLFilter `msgpack:"filter"`
}

// DescribeACLsResponse lists bindings sorted by resource type, name,
// principal, operation and permission. Enforced says whether the answering
// node enforces them (started with --authorizer acl).
type DescribeACLsResponse struct {
	Err            ErrorCode    `msgpack:"err"`
	Message        string       `msgpack:"msg"`
	ACLs           []ACLBinding `msgpack:"acls"`
	Enforced       bool         `msgpack:"enforced"`
	MetadataOffset int64        `msgpack:"moff"`
}
