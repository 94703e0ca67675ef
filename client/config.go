package client

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"paymentlog/quic"
)

// Defaults for Config.
const (
	DefaultRequestTimeout  = 10 * time.Second
	DefaultMetadataTimeout = 5 * time.Second
	DefaultHedgeDelay      = 300 * time.Millisecond
	DefaultMetadataMaxAge  = 30 * time.Second
	DefaultCertName        = "client"
)

// DefaultBootstrap is the local 3-node cluster of scripts/cluster.sh.
var DefaultBootstrap = []string{"127.0.0.1:7101", "127.0.0.1:7102", "127.0.0.1:7103"}

// Config configures a Client. Zero fields take the defaults named in their comments.
type Config struct {
	// Bootstrap lists node addresses (host:port) used to find the cluster. Required.
	Bootstrap []string
	// TLS says how to authenticate; a zero Dir is dev mode (no verification).
	// With a Dir and no Name, Name is DefaultCertName ("client").
	TLS quic.TLSConfig
	// Logger receives debug and warning logs; default slog.Default().
	Logger *slog.Logger
	// RequestTimeout bounds one admin request (CreateTopic, DescribeCluster, ...); default 10s.
	RequestTimeout time.Duration
	// MetadataTimeout bounds one metadata refresh across all nodes tried; default 5s.
	MetadataTimeout time.Duration
	// HedgeDelay is how long a metadata request waits for a node before also
	// asking the next one; default 300ms.
	HedgeDelay time.Duration
	// MetadataMaxAge is how old the cached metadata may get before a
	// producer (at its next record) or a consumer following a topic
	// (Consumer.AssignNewPartitions) refreshes it in the background
	// (Kafka's metadata.max.age.ms): the longest a running producer keeps
	// writing to a topic's old partitions only after partitions were added;
	// default 30s. Failures (a leader gone) refresh at once regardless.
	MetadataMaxAge time.Duration
}

// ErrNoBootstrap is returned by New when Config.Bootstrap is empty.
var ErrNoBootstrap = errors.New("client: no bootstrap addresses")

// ConfigError names an invalid configuration field.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string { return fmt.Sprintf("client: %s: %s", e.Field, e.Reason) }

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.MetadataTimeout <= 0 {
		c.MetadataTimeout = DefaultMetadataTimeout
	}
	if c.HedgeDelay <= 0 {
		c.HedgeDelay = DefaultHedgeDelay
	}
	if c.MetadataMaxAge <= 0 {
		c.MetadataMaxAge = DefaultMetadataMaxAge
	}
	if c.TLS.Dir != "" && c.TLS.Name == "" {
		c.TLS.Name = DefaultCertName
	}
	return c
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	if len(c.Bootstrap) == 0 {
		return ErrNoBootstrap
	}
	for _, a := range c.Bootstrap {
		if strings.TrimSpace(a) == "" || !strings.Contains(a, ":") {
			return &ConfigError{Field: "Bootstrap", Reason: fmt.Sprintf("%q is not host:port", a)}
		}
	}
	return nil
}

// ParseBootstrap splits "host:port,host:port" into addresses, dropping blanks.
func ParseBootstrap(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}
