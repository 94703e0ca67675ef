package cli

import (
	"fmt"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"paymentlog/client"
	"paymentlog/wire"
)

// Replication policies (MirrorMaker 2's replication.policy.class): how a
// source topic's copy on the target is named, and which source topics are
// never copied because their name says they came from the target.
//
//   - identity (IdentityReplicationPolicy, the default): the copy has the
//     source topic's name. Two clusters mirroring each other's topics of
//     one name then mix their own records and the other's in one topic,
//     and need --skip-mirrored as a loop guard.
//   - prefix (DefaultReplicationPolicy): the copy of topic T from the
//     cluster aliased A (--source-alias) is "A" + separator + T (e.g.
//     eu1.payments; --replication-policy-separator, default "."). With
//     --target-alias B, a source topic is not copied when its name says it
//     came from B, by MirrorMaker 2's isCycle: the name split at the
//     separator (trailing empty parts dropped, as Java's String.split
//     does) has B as one of its parts but the last (us1.payments,
//     eu1.us1.payments). Each region writes its own topics under their
//     plain names and reads the other's copies under its alias, without a
//     loop and without mixing.

// Replication policy names (--replication-policy).
const (
	policyIdentity = "identity"
	policyPrefix   = "prefix"
)

// defaultPolicySeparator is --replication-policy-separator's default,
// MirrorMaker 2's replication.policy.separator.
const defaultPolicySeparator = "."

// maxAliasLen bounds a cluster alias.
const maxAliasLen = 64

// replicationPolicy maps source topic names to target topic names. The
// zero value is the identity policy.
type replicationPolicy struct {
	// prefix: the prefix policy; false: identity.
	prefix bool
	// sourceAlias and separator make the copy's name (prefix only).
	sourceAlias, separator string
	// targetAlias, when not "", names the target cluster: source topics
	// whose names say they came from it are not copied (prefix only).
	targetAlias string
}

// targetTopic is the name of the copy of source topic on the target.
func (p replicationPolicy) targetTopic(source string) string {
	if !p.prefix {
		return source
	}
	return p.sourceAlias + p.separator + source
}

// sourceTopic is the source topic whose copy on the target is named
// copy, the inverse of targetTopic; false when no source topic's copy has
// that name (with prefix, a name without the source alias and separator
// in front: a topic of the target's own, or another source's copy).
func (p replicationPolicy) sourceTopic(copy string) (string, bool) {
	if !p.prefix {
		return copy, true
	}
	t, ok := strings.CutPrefix(copy, p.sourceAlias+p.separator)
	return t, ok && t != ""
}

// targetTP is tp's copy on the target.
func (p replicationPolicy) targetTP(tp client.TopicPartition) client.TopicPartition {
	return client.TopicPartition{Topic: p.targetTopic(tp.Topic), Partition: tp.Partition}
}

// renames reports whether the copies have other names than their sources.
func (p replicationPolicy) renames() bool { return p.prefix }

// checkTarget says why source topic cannot be copied under the policy's
// name for it ("" when it can): too long for a topic name.
func (p replicationPolicy) checkTarget(source string) string {
	if t := p.targetTopic(source); len(t) > wire.MaxTopicNameLen {
		return fmt.Sprintf("its copy's name %s is longer than %d bytes", t, wire.MaxTopicNameLen)
	}
	return ""
}

// isCycle reports whether topic's name says it came from the target
// cluster (MirrorMaker 2's MirrorSourceConnector.isCycle with
// DefaultReplicationPolicy): some part of its name but the last, split at
// the separator, is the target's alias. Copying it would send the
// target's own records back to it. Never with the identity policy or
// without a target alias (nothing says where a topic came from).
func (p replicationPolicy) isCycle(topic string) bool {
	if !p.prefix || p.targetAlias == "" {
		return false
	}
	parts := strings.Split(topic, p.separator)
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1] // Java's split drops trailing empty strings
	}
	for _, s := range parts[:max(len(parts)-1, 0)] {
		if s == p.targetAlias {
			return true
		}
	}
	return false
}

// label is tp, and its copy's name when the policy renames it: for notes
// that name a partition on both clusters.
func (p replicationPolicy) label(tp client.TopicPartition) string {
	if !p.renames() {
		return tp.String()
	}
	return fmt.Sprintf("%s (%s on the target)", tp, p.targetTP(tp))
}

// replicationPolicyFlags are the flags of the policy, of mirror and
// translate-offsets (withTarget: also --target-alias, the mirror's).
func replicationPolicyFlags(withTarget bool) []ucli.Flag {
	fs := []ucli.Flag{
		&ucli.StringFlag{Name: "replication-policy", Value: policyIdentity,
			Usage:   "how copies are named on the target: identity (the source topic's name) or prefix (<source alias><separator><topic>, MirrorMaker 2's default: for clusters mirroring each other)",
			EnvVars: envVar("MIRROR_REPLICATION_POLICY")},
		&ucli.StringFlag{Name: "source-alias", Usage: "the source cluster's alias, the prefix of its topics' copies (required with --replication-policy prefix; letters, digits, '.', '_', '-', without the separator)",
			EnvVars: envVar("MIRROR_SOURCE_ALIAS")},
		&ucli.StringFlag{Name: "replication-policy-separator", Value: defaultPolicySeparator,
			Usage:   "what separates the alias from the topic in a copy's name (prefix policy)",
			EnvVars: envVar("MIRROR_REPLICATION_POLICY_SEPARATOR")},
	}
	if withTarget {
		fs = append(fs, &ucli.StringFlag{Name: "target-alias",
			Usage:   "the target cluster's alias (prefix policy): source topics whose name says they came from it (us1.payments, eu1.us1.payments with alias us1) are not mirrored back",
			EnvVars: envVar("MIRROR_TARGET_ALIAS")})
	}
	return fs
}

// parseReplicationPolicy reads replicationPolicyFlags.
func parseReplicationPolicy(c *ucli.Context) (replicationPolicy, error) {
	var p replicationPolicy
	switch name := c.String("replication-policy"); name {
	case policyIdentity:
		for _, f := range []string{"source-alias", "target-alias", "replication-policy-separator"} {
			if c.IsSet(f) {
				return p, usageError("--%s: only with --replication-policy prefix (identity keeps the topic names)", f)
			}
		}
		return p, nil
	case policyPrefix:
		p.prefix, p.sourceAlias, p.separator, p.targetAlias = true, c.String("source-alias"), c.String("replication-policy-separator"), c.String("target-alias")
	default:
		return p, usageError("--replication-policy: %q is not identity or prefix", name)
	}
	return p, p.validate()
}

// validate checks a prefix policy's separator and aliases.
func (p replicationPolicy) validate() error {
	if !p.prefix {
		return nil
	}
	if p.separator == "" || len(p.separator) > 8 || strings.Trim(p.separator, topicNameChars) != "" {
		return usageError("--replication-policy-separator: %q is not 1 to 8 of the characters of a topic name (letters, digits, '.', '_', '-')", p.separator)
	}
	if p.sourceAlias == "" {
		return usageError("--replication-policy prefix: --source-alias is required (the prefix of the copies' names, e.g. eu1)")
	}
	for _, a := range []struct{ flag, alias string }{{"source-alias", p.sourceAlias}, {"target-alias", p.targetAlias}} {
		if a.alias == "" {
			continue
		}
		if why := checkAlias(a.alias, p.separator); why != "" {
			return usageError("--%s: %q %s", a.flag, a.alias, why)
		}
	}
	if p.targetAlias == p.sourceAlias {
		return usageError("--target-alias and --source-alias are both %q: the source and the target are different clusters", p.sourceAlias)
	}
	return nil
}

// topicNameChars are the bytes of topic names.
const topicNameChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"

// checkAlias says why alias cannot name a cluster with separator ("" when
// it can): a topic-name-safe token (letters, digits, '.', '_', '-'), 1
// to maxAliasLen bytes, without the
// separator (its copies' names would not say where the alias ends), and
// not making internal names ("__").
func checkAlias(alias, separator string) string {
	switch {
	case len(alias) > maxAliasLen:
		return fmt.Sprintf("is longer than %d bytes", maxAliasLen)
	case wire.CheckGroupName(alias) != "":
		return "is not a token of letters, digits, '.', '_' and '-'"
	case strings.Contains(alias, separator):
		return fmt.Sprintf("contains the separator %q", separator)
	case strings.HasPrefix(alias+separator, "__"):
		return "would make internal topic names (starting with __)"
	}
	return ""
}
