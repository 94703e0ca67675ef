package wire

import (
	"fmt"
	"sort"
)

// Client quotas (Kafka's user quotas, kafka-configs --entity-type users):
// how many bytes per second one principal may produce to, and fetch from,
// each node. A node that sees a principal go over answers its requests
// late (the answer carries ThrottleMs), so its clients slow down to the
// quota instead of crowding out everyone else; nodes' own traffic
// (replication) is never throttled. Quotas live in the metadata log.

// Frame types of the quota requests. Part of the wire format: never
// renumber.
const (
	TypeAlterClientQuotas    = 32
	TypeDescribeClientQuotas = 33
)

// Quota keys: bytes per second per node (Kafka's names).
const (
	QuotaProducerByteRate = "producer_byte_rate"
	QuotaConsumerByteRate = "consumer_byte_rate"
)

// QuotaKeys are the quota keys.
var QuotaKeys = []string{QuotaProducerByteRate, QuotaConsumerByteRate}

// Limits.
const (
	// MaxQuotaEntities bounds the principals (and the default) with quotas.
	MaxQuotaEntities = 10_000
	// MinQuotaByteRate is the lowest rate a quota may set: lower would
	// hold a single 1 MiB batch for longer than any client waits.
	MinQuotaByteRate = 1024
)

// QuotaEntry changes one entity's quotas: Set keys are set, Delete keys
// removed (the entity then has the default's, if any). Principal is
// "User:NAME" (wire.CheckPrincipal, without the wildcard), or "" for the
// default: the quota of every principal that has none of its own for that
// key (each such principal gets the default rate for itself).
type QuotaEntry struct {
	Principal string           `msgpack:"pr"`
	Set       map[string]int64 `msgpack:"set,omitempty"`
	Delete    []string         `msgpack:"del,omitempty"`
}

// CheckQuotaEntry says why e is not a valid change ("" when it is).
func CheckQuotaEntry(e QuotaEntry) string {
	if e.Principal != "" {
		if e.Principal == WildcardPrincipal {
			return fmt.Sprintf("%s is no principal for a quota: the default (\"\") applies to every principal without its own", WildcardPrincipal)
		}
		if why := CheckPrincipal(e.Principal); why != "" {
			return why
		}
	}
	if len(e.Set) == 0 && len(e.Delete) == 0 {
		return fmt.Sprintf("quota of %s: nothing to set or delete", QuotaEntityName(e.Principal))
	}
	keys := make([]string, 0, len(e.Set))
	for k := range e.Set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !contains(QuotaKeys, k) {
			return fmt.Sprintf("quota key %.64q: want %s or %s", k, QuotaProducerByteRate, QuotaConsumerByteRate)
		}
		if v := e.Set[k]; v < MinQuotaByteRate {
			return fmt.Sprintf("quota %s=%d: want bytes per second, at least %d", k, v, MinQuotaByteRate)
		}
	}
	for i, k := range e.Delete {
		if !contains(QuotaKeys, k) {
			return fmt.Sprintf("quota key %.64q: want %s or %s", k, QuotaProducerByteRate, QuotaConsumerByteRate)
		}
		if _, both := e.Set[k]; both || contains(e.Delete[:i], k) {
			return fmt.Sprintf("quota key %s set and deleted, or deleted twice", k)
		}
	}
	return ""
}

// QuotaEntityName names a quota entity for messages: the principal, or
// "the default".
func QuotaEntityName(principal string) string {
	if principal == "" {
		return "the default"
	}
	return principal
}

// AlterClientQuotasRequest (frame type 32) changes quotas; it may be sent
// to any node (NotController with the hint from one that is not the active
// controller). Needs alter on the cluster. Refused whole with
// InvalidRequest for an invalid entry (naming it), an entity named twice,
// more than MaxACLsPerRequest entries, or more than MaxQuotaEntities
// entities in the cluster after it; UnsupportedVersion while a registered
// broker's build does not apply quota records. A change that changes
// nothing succeeds (a retry).
type AlterClientQuotasRequest struct {
	Entries []QuotaEntry `msgpack:"entries"`
}

// AlterClientQuotasResponse answers once the change is committed.
type AlterClientQuotasResponse struct {
	Err            ErrorCode `msgpack:"err"`
	Message        string    `msgpack:"msg"`
	MetadataOffset int64     `msgpack:"moff"`
	ControllerID   int32     `msgpack:"ctrl"`
}

// DescribeClientQuotasRequest (frame type 33) lists the quotas set, from
// the answering node's image. Needs describe on the cluster.
type DescribeClientQuotasRequest struct{}

// ClientQuota is one entity's quotas ("" is the default).
type ClientQuota struct {
	Principal string           `msgpack:"pr"`
	Values    map[string]int64 `msgpack:"values"`
}

// DescribeClientQuotasResponse lists every entity with a quota, the
// default first, then by principal.
type DescribeClientQuotasResponse struct {
	Err            ErrorCode     `msgpack:"err"`
	Message        string        `msgpack:"msg"`
	Quotas         []ClientQuota `msgpack:"quotas"`
	MetadataOffset int64         `msgpack:"moff"`
}
