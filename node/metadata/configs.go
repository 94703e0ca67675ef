package metadata

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
)

// Topic config keys understood by paymentlog. Other keys made of lower-case
// letters, digits, dots and dashes are stored as given.
const (
	ConfigUncleanLeaderElection = "unclean.leader.election.enable" // "true" | "false" (default)
	ConfigRetentionMs           = "retention.ms"                   // integer, -1 = forever
	ConfigRetentionBytes        = "retention.bytes"                // integer, -1 = unlimited
	ConfigSegmentBytes          = "segment.bytes"                  // integer in [1 MiB, MaxSegmentBytes]
)

// Limits on what a topic may ask for.
const (
	MaxTopicNameLen   = 249
	MaxPartitions     = 10000
	MaxReplicas       = 16
	MaxConfigs        = 64
	MaxConfigValueLen = 1024
	// MaxSegmentBytes is segment.MaxSegmentBytes (positions in a segment's
	// index are uint32 and must fit an int32).
	MaxSegmentBytes = math.MaxInt32
)

var (
	topicNameRE = regexp.MustCompile(`^[a-zA-Z0-9._-]+$`)
	configKeyRE = regexp.MustCompile(`^[a-z0-9.-]{1,128}$`)
)

// ValidateTopicName checks a topic name: 1–249 characters of [a-zA-Z0-9._-],
// not "." or "..", not starting with "__" (reserved for internal logs such as
// __cluster_metadata).
func ValidateTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("topic name is empty")
	case len(name) > MaxTopicNameLen:
		return fmt.Errorf("topic name is longer than %d characters", MaxTopicNameLen)
	case name == "." || name == "..":
		return fmt.Errorf("topic name %q is not allowed", name)
	case len(name) >= 2 && name[:2] == "__":
		return fmt.Errorf("topic name %q: names starting with __ are reserved", name)
	case !topicNameRE.MatchString(name):
		return fmt.Errorf("topic name %q: only letters, digits, '.', '_' and '-' are allowed", name)
	}
	return nil
}

// ValidateConfigs checks topic configs.
func ValidateConfigs(cfg map[string]string) error {
	if len(cfg) > MaxConfigs {
		return fmt.Errorf("more than %d configs", MaxConfigs)
	}
	for k, v := range cfg {
		if !configKeyRE.MatchString(k) {
			return fmt.Errorf("config key %q: only lower-case letters, digits, '.' and '-' are allowed", k)
		}
		if len(v) > MaxConfigValueLen {
			return fmt.Errorf("config %s: value longer than %d bytes", k, MaxConfigValueLen)
		}
		switch k {
		case ConfigUncleanLeaderElection:
			if v != "true" && v != "false" {
				return fmt.Errorf("config %s: want true or false, got %q", k, v)
			}
		case ConfigRetentionMs, ConfigRetentionBytes:
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < -1 {
				return fmt.Errorf("config %s: want an integer >= -1, got %q", k, v)
			}
		case ConfigSegmentBytes:
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 1<<20 || n > MaxSegmentBytes {
				return fmt.Errorf("config %s: want an integer from 1048576 to %d, got %q", k, MaxSegmentBytes, v)
			}
		}
	}
	return nil
}
