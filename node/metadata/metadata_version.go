package metadata

import (
	"fmt"
	"slices"

	"paymentlog/wire"
)

// Metadata versions (Kafka's metadata.version feature level, kept simple):
// each build applies the records of versions up to MetadataVersion, and
// registers with that number. A change whose records need a later version
// than version 1 is decided only when every registered broker's build
// applies it (requireVersion: UnsupportedVersion otherwise, naming the
// brokers), so a rolling upgrade never has an old node skip records the
// others apply. The first such record applied raises the image's version
// (the version the cluster uses), and from then on a broker whose build
// applies less is refused at registration (DecideRegister) instead of
// joining with a diverging image.
//
//	1: every record up to the fourteenth session's (partition `lost`,
//	   registrations naming empty replicas, ...): builds without versions.
//	2: TopicConfigChanged.rf (replication factor changes) and
//	   ClusterConfigChanged (cluster configs).
//	3: BrokerUnregistered (unregister.go).
//	4: GroupOffsetsCommitted and GroupDeleted (groups.go).
//	5: ACLsCreated and ACLsDeleted (acls.go).
//	6: ClientQuotasChanged (quotas.go).
//	7: compacted topics: a TopicCreated or TopicConfigChanged setting a
//	   cleanup.policy with compact. The records are as before, but the
//	   cleaner then writes batches with AttrCompacted, which older builds
//	   refuse as corrupt when they copy them (compactionVersion).
//	8: ACL bindings with a host (wire.ACLBinding.Host) in ACLsCreated and
//	   ACLsDeleted: a build that does not know the field would apply them
//	   as bindings for every host (aclHostsVersion).
const MetadataVersion int32 = 8

// compactionVersion is the metadata version of compacted topics.
const compactionVersion = 7

// compactsConfigs reports whether cfg sets a cleanup.policy that includes
// compact.
func compactsConfigs(cfg map[string]string) bool {
	v, ok := cfg[ConfigCleanupPolicy]
	if !ok {
		return false
	}
	compact, _, _ := ParseCleanupPolicy(v)
	return compact
}

// versionOf reads a registered version: 0 is a build from before versions.
func versionOf(v int32) int32 { return max(v, 1) }

// Version is the metadata version the cluster uses (1 until a record of a
// later version was applied).
func (m *Image) Version() int32 { return m.metadataVersion }

// useVersion notes that a record of version v was applied.
func (b *builder) useVersion(v int32) {
	b.next.metadataVersion = max(b.next.metadataVersion, v)
}

// requireVersion refuses a change needing version v while a registered
// broker's build applies less (fenced ones included: they may come back).
func requireVersion(img *Image, v int32, what string) error {
	return requireVersionSkipping(img, v, what, func(BrokerState) bool { return false })
}

// requireVersionSkipping is requireVersion not counting the brokers skip
// reports.
func requireVersionSkipping(img *Image, v int32, what string, skip func(BrokerState) bool) error {
	var old []string
	for _, b := range img.Brokers() {
		if !skip(b) && versionOf(b.MetadataVersion) < v {
			old = append(old, fmt.Sprintf("%d (version %d)", b.ID, versionOf(b.MetadataVersion)))
		}
	}
	if len(old) == 0 {
		return nil
	}
	slices.Sort(old)
	return werr(wire.UnsupportedVersion, "%s needs metadata version %d, which the builds of brokers %v do not apply: upgrade them first",
		what, v, old)
}
