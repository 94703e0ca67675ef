package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"paymentlog/wire"
)

// A GroupConsumer is a member of a consumer group (wire/group_members.go,
// Kafka's KIP-848 with the assignment computed by the active controller):
// the GroupConsumers that name one group share the partitions of the topics
// they subscribe to, each partition read by one of them at a time, and
// commit their progress under the group's name as members.
//
// A goroutine of its own heartbeats to the active controller every
// heartbeat interval the controller answers with, reporting the partitions
// the member owns and learning its assignment. Poll applies the changes:
//
//  1. A partition the member owns and is no longer assigned is released:
//     its position is committed (GroupConsumerConfig.CommitAt says what to
//     commit instead), it is no longer fetched (Consumer.Unassign),
//     OnRevoked is called, and a heartbeat goes at once to report it
//     released. The controller hands a partition to its next owner only
//     after that heartbeat, so the next owner starts at this commit.
//  2. A partition assigned and not owned yet starts at the group's
//     committed offset, or at From where the group has none (as
//     Consumer.SeekCommitted does: a committed leader epoch checks the log
//     was not truncated below it), and OnAssigned is called.
//
// A member the controller forgot (its session timed out, or another
// controller took over) is answered UnknownMemberID; it joins again at once
// under the same member id, reporting what it owns, which it keeps unless
// another member has it by then (then it is released as in 1). A member
// none of whose heartbeats was answered for a session timeout must assume
// the group gave its partitions to others: Poll releases them all without
// committing (a commit would be refused, or overwrite the new owner's) and
// the member joins again once the controller answers.
//
// An application that stops calling Poll (stuck on a record, a lock, a
// dead downstream) would hold its partitions while its heartbeats go on.
// So a member whose application has not called Poll for MaxPollInterval
// leaves the group (Kafka's max.poll.interval.ms), and the controller
// fences one that keeps a partition it was told to release for as long
// (its rebalance timeout: FencedMemberEpoch). Either way its partitions go
// to the others, and when the application calls Poll again, Poll releases
// everything without committing and the member joins again.
//
// Delivery is at least once: the records returned after the last commit
// of a partition are read again by its next owner when the member dies or
// loses its membership. A member that Polls again has processed what Poll
// returned before (or says otherwise with CommitAt), so a partition handed
// over by a live member is read on without a gap and without a repeat.
//
// Lifecycle: NewGroupConsumer joins the group and starts the heartbeats;
// Poll, Commit and Close are called by one goroutine (the Consumer they
// drive is not safe for concurrent use); Close commits, leaves the group
// (the others get its partitions at once, not a session timeout later),
// stops the heartbeats and closes the Consumer.
type GroupConsumer struct {
	c    *Client
	cfg  GroupConsumerConfig // validated, with its defaults
	cons *Consumer           // used by Poll's goroutine only
	// skipped are the partitions owned that Skip left out: never
	// started. Used by Poll's goroutine only. Invariant: owned holds
	// every partition of skipped, none of which is in cons.
	skipped map[TopicPartition]bool
	log     *slog.Logger

	wake   chan struct{}      // buffered 1: heartbeat at once (partitions released)
	notify chan struct{}      // buffered 1: the assignment changed (Poll waiting with no partitions)
	stop   context.CancelFunc // ends the heartbeat goroutine
	done   chan struct{}      // closed once it has ended
	closed bool

	// mu is shared by Poll's goroutine and the heartbeat goroutine. No I/O
	// is done while it is held.
	mu struct {
		sync.Mutex
		memberID string
		// epoch is the last answer's member epoch; JoinEpoch to join
		// (again) with the subscription.
		epoch int32
		// interval and session are the last answer's heartbeat interval
		// and session timeout.
		interval, session time.Duration
		// assigned is the last answer's assignment. owned is every
		// partition Poll started or is starting and has not released:
		// with assigned, what a heartbeat reports owning.
		// Invariant: owned holds every partition of cons.
		assigned, owned map[TopicPartition]bool
		// lastOK is when the last heartbeat answered was sent: the
		// controller forgets the member a session timeout after it got
		// its last heartbeat, which is later.
		lastOK time.Time
		// expelled: the membership was lost (no heartbeat answered for
		// a session timeout, left for want of a Poll, fenced), for the
		// reason lost says. Poll releases everything without committing;
		// heartbeats wait for it.
		expelled bool
		lost     string
		// polling says Poll is running; lastPoll is when it last
		// returned (or the member joined): MaxPollInterval runs from it.
		polling  bool
		lastPoll time.Time
		// pending: the assignment changed since Poll last looked.
		pending bool
		// interrupt ends the Consumer.Poll running (nil when none), so
		// that a change is applied without waiting for its MaxWait.
		interrupt context.CancelFunc
		// err is a refusal that joining again cannot mend (a heartbeat
		// refused InvalidRequest): Poll returns it.
		err error
		// answeredOK is closed (and replaced) when a heartbeat is
		// answered without error (awaitHeartbeat); nil until one waits.
		answeredOK chan struct{}
	}
}

// GroupConsumerConfig configures a GroupConsumer. Zero fields take the
// defaults in their comments.
type GroupConsumerConfig struct {
	// Group is the group to join (1 to wire.MaxGroupNameLen letters,
	// digits, '.', '_', '-'). Required.
	Group string
	// Topics are the topics whose partitions the group's members share
	// (at most wire.MaxGroupTopics). Required, unless TopicPattern is set.
	Topics []string
	// TopicPattern, instead of Topics, subscribes to every topic whose
	// whole name matches this regular expression (Go's RE2 syntax, e.g.
	// "payments-.*"), including topics created later: the controller
	// resolves it at each heartbeat (Kafka's subscription by regex).
	TopicPattern string
	// ClientID is shown beside the member id by `group describe` (at
	// most wire.MaxClientIDLen bytes); default "HOSTNAME/PID".
	ClientID string
	// InstanceID makes the member static (Kafka's group.instance.id):
	// unique in the group, the same across restarts of one process (a pod
	// name, "billing-3"). Close then leaves for a while only: the
	// member's partitions wait a session timeout for the next
	// GroupConsumer with this InstanceID, which gets them back at the
	// committed offsets, so a restart moves no partition to another
	// member. NewGroupConsumer waits (within its ctx) while a member that
	// did not Close holds the InstanceID, until its session times out.
	// Default "": a dynamic member.
	InstanceID string
	// From is where a partition the group has no committed offset for
	// starts: SeekBeginning, SeekEnd or an offset; 0 is offset 0.
	From int64
	// FromTime, when not zero, replaces From: such a partition starts at
	// its first record stamped at or after it (SeekEnd where none is).
	FromTime time.Time
	// MaxPollInterval is the longest the application may take between
	// two Polls (Kafka's max.poll.interval.ms); default 5 minutes. A
	// member that does not Poll within it leaves the group, and the next
	// Poll releases every partition without committing and joins again.
	// It is also the member's rebalance timeout: the controller fences a
	// member that keeps a partition it was told to release for longer.
	MaxPollInterval time.Duration
	// Consumer configures the Consumer that reads the partitions.
	Consumer ConsumerConfig
	// CommitAt, when set, is what the member commits for an owned
	// partition whose position (the offset after the last record Poll
	// returned) is position, in every commit it makes by itself
	// (Commit, a release, Close): an application that did not process
	// everything Poll returned gives the first offset it did not
	// process; false commits nothing for the partition. Called from
	// Poll, Commit and Close.
	CommitAt func(tp TopicPartition, position int64) (int64, bool)
	// OnAssigned is called from Poll with the partitions it has just
	// started, before their records are fetched.
	OnAssigned func([]TopicPartition)
	// Skip, when set, is asked from Poll of each partition assigned,
	// before it starts: true makes the member own it without ever
	// fetching or committing it (it is in no OnAssigned nor OnRevoked,
	// and not read by Consumer), until the group takes it away. For a
	// subscription by TopicPattern that matches topics the application
	// does not want (the controller resolves the pattern, and assigns
	// them all the same).
	Skip func(TopicPartition) bool
	// OnRevoked is called from Poll with the partitions it has just
	// released: committed (unless the membership was lost) and no
	// longer fetched, before the controller hears of it (no other member
	// reads them yet). Their records Poll returned before were the last.
	// Close calls it too, after its commit.
	OnRevoked func([]TopicPartition)
	// OnCommitError is called from Poll when the commit of partitions it
	// releases fails (they are released all the same: their next owner
	// reads again from the last commit), with the partitions and the
	// error; the failure is also logged at Warn.
	OnCommitError func([]TopicPartition, error)
}

// Validate reports the first invalid field as a *ConfigError.
func (cfg GroupConsumerConfig) Validate() error {
	bad := func(field, format string, args ...any) error {
		return &ConfigError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	if why := wire.CheckGroupName(cfg.Group); why != "" {
		return bad("Group", "%s", why)
	}
	switch {
	case len(cfg.Topics) == 0 && cfg.TopicPattern == "":
		return bad("Topics", "no topic to consume")
	case len(cfg.Topics) > 0 && cfg.TopicPattern != "":
		return bad("TopicPattern", "set with Topics: subscribe to one or the other")
	case len(cfg.TopicPattern) > wire.MaxTopicPatternLen:
		return bad("TopicPattern", "longer than %d bytes", wire.MaxTopicPatternLen)
	case len(cfg.Topics) > wire.MaxGroupTopics:
		return bad("Topics", "%d topics: at most %d", len(cfg.Topics), wire.MaxGroupTopics)
	case len(cfg.ClientID) > wire.MaxClientIDLen:
		return bad("ClientID", "longer than %d bytes", wire.MaxClientIDLen)
	case cfg.InstanceID != "" && wire.CheckGroupName(cfg.InstanceID) != "":
		return bad("InstanceID", "%s", wire.CheckGroupName(cfg.InstanceID))
	case cfg.MaxPollInterval < 0 || cfg.MaxPollInterval > maxMaxPollInterval:
		return bad("MaxPollInterval", "%v is not between 0 (the default) and %v", cfg.MaxPollInterval, maxMaxPollInterval)
	case cfg.From < 0 && cfg.From != SeekBeginning && cfg.From != SeekEnd:
		return bad("From", "%d is not an offset, SeekBeginning or SeekEnd", cfg.From)
	}
	for _, t := range cfg.Topics {
		if wire.CheckGroupName(t) != "" { // topic names follow the same rule
			return bad("Topics", "%.128q is not a topic name", t)
		}
	}
	if cfg.TopicPattern != "" {
		if _, err := wire.TopicPatternRegexp(cfg.TopicPattern); err != nil {
			return bad("TopicPattern", "%v", err)
		}
	}
	return nil
}

func (cfg GroupConsumerConfig) withDefaults() GroupConsumerConfig {
	cfg.Topics = slices.Compact(slices.Sorted(slices.Values(cfg.Topics)))
	if cfg.MaxPollInterval == 0 {
		cfg.MaxPollInterval = DefaultMaxPollInterval
	}
	if cfg.ClientID == "" {
		host, err := os.Hostname()
		if err != nil {
			host = "unknown"
		}
		cfg.ClientID = fmt.Sprintf("%.200s/%d", host, os.Getpid())
	}
	return cfg
}

// DefaultMaxPollInterval is GroupConsumerConfig.MaxPollInterval's default
// (Kafka's max.poll.interval.ms).
const DefaultMaxPollInterval = 5 * time.Minute

// maxMaxPollInterval is the longest MaxPollInterval the wire's rebalance
// timeout (int32 milliseconds) holds, rounded down to a day.
const maxMaxPollInterval = 24 * time.Hour

// Until the controller's first answer says otherwise.
const (
	defaultGroupSessionTimeout    = 10 * time.Second
	defaultGroupHeartbeatInterval = time.Second
)

// ErrMembershipLost is returned (wrapped) by GroupConsumer.Commit and
// CommitOffsets when the member lost its membership and Poll has not
// released its partitions yet: none of its heartbeats was answered for a
// session timeout, it left for want of a Poll within MaxPollInterval, or
// the controller fenced it. The group may have given its partitions to
// others, so its commits are not sent, and the next Poll releases them.
var ErrMembershipLost = errors.New("client: group membership lost")

// ErrGroupConsumerClosed is returned by Poll after Close.
var ErrGroupConsumerClosed = errors.New("client: group consumer closed")

// NewGroupConsumer joins cfg.Group (its first heartbeat, retried until ctx
// ends as Admin requests are, and while another member holds
// cfg.InstanceID) and starts the heartbeats. It starts no partition: the
// first Poll does. Errors: a *ConfigError for an invalid cfg, the refusal
// of the join (wire.InvalidRequest: a group with wire.MaxGroupMembers
// members), or ctx's end (wrapping wire.UnreleasedInstanceID when another
// member held the InstanceID until then).
func (c *Client) NewGroupConsumer(ctx context.Context, cfg GroupConsumerConfig) (*GroupConsumer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	g := &GroupConsumer{c: c, cfg: cfg, cons: c.NewConsumer(cfg.Consumer), skipped: map[TopicPartition]bool{}, log: c.log.With("group", cfg.Group),
		wake: make(chan struct{}, 1), notify: make(chan struct{}, 1), done: make(chan struct{})}
	g.mu.epoch = wire.JoinEpoch
	g.mu.interval, g.mu.session = defaultGroupHeartbeatInterval, defaultGroupSessionTimeout
	g.mu.assigned, g.mu.owned = map[TopicPartition]bool{}, map[TopicPartition]bool{}
	g.mu.lastPoll = time.Now()
	if err := g.join(ctx); err != nil {
		g.cons.Close()
		return nil, fmt.Errorf("client: join group %s: %w", cfg.Group, err)
	}
	hctx, stop := context.WithCancel(context.Background())
	g.stop = stop
	go g.run(hctx)
	return g, nil
}

// MemberID is the member id the controller gave.
func (g *GroupConsumer) MemberID() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.mu.memberID
}

// Assignment lists the partitions the member owns, sorted: those Poll
// reads, and those it has claimed and not started yet.
func (g *GroupConsumer) Assignment() []TopicPartition {
	g.mu.Lock()
	defer g.mu.Unlock()
	return sortedPartitions(g.mu.owned)
}

// Stable reports whether the last heartbeat answer assigned exactly the
// partitions the member owns: nothing to release or start. (Other members
// may still wait for partitions this one has not been told to release.)
func (g *GroupConsumer) Stable() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.mu.err == nil && !g.mu.expelled && !g.mu.pending && maps.Equal(g.mu.owned, g.mu.assigned)
}

// Consumer is the Consumer reading the member's partitions, for
// HighWatermark, Position, Seek and the like, from Poll's goroutine. Assign
// and Unassign are the member's: do not call them.
func (g *GroupConsumer) Consumer() *Consumer { return g.cons }

// Close commits (Commit), calls OnRevoked with the partitions it read,
// stops the heartbeats, leaves the group (its partitions go to the other
// members at once; with an InstanceID they wait a session timeout for the
// next member with it) and closes the Consumer. The commit and the leave are
// bounded by ctx: a leave not sent leaves the partitions to be handed over
// once the session times out. It returns the commit's and the leave's
// errors; it is a no-op after the first call.
func (g *GroupConsumer) Close(ctx context.Context) error {
	if g.closed {
		return nil
	}
	g.closed = true
	cerr := g.Commit(ctx)
	if reading := g.cons.Assignment(); len(reading) > 0 && g.cfg.OnRevoked != nil {
		slices.SortFunc(reading, comparePartitions)
		g.cfg.OnRevoked(reading)
	}
	g.stop()
	<-g.done
	lerr := g.leave(ctx)
	g.cons.Close()
	return errors.Join(cerr, lerr)
}

// sortedPartitions lists set's partitions sorted by topic and partition.
func sortedPartitions(set map[TopicPartition]bool) []TopicPartition {
	out := make([]TopicPartition, 0, len(set))
	for tp := range set {
		out = append(out, tp)
	}
	slices.SortFunc(out, comparePartitions)
	return out
}

func comparePartitions(a, b TopicPartition) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}
