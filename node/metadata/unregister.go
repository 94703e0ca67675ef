package metadata

import (
	"fmt"
	"strings"

	"paymentlog/wire"
)

// Unregistering a broker (Kafka's UnregisterBroker, `kafka-cluster.sh
// unregister`) removes a decommissioned broker from the image: it leaves
// `cluster status`, stops counting for metadata versions, and the active
// controller drops it from the raft learners. Only a broker that is gone
// can be removed this way, and only once nothing depends on it:
//
//   - it must be fenced (a live broker would only register again),
//   - it must hold no replica of any partition, also not one being added or
//     removed by a reassignment (move them off first: its copies could be
//     the only ones of acknowledged records), and
//   - it must not be a controller (listed in --controllers): the raft
//     voters are fixed.
//
// If the process comes back after all, it registers as a broker new to the
// cluster, like Kafka's.

// BrokerUnregistered (record type 13, metadata version 3) removes the named
// incarnation of a broker. It applies when that incarnation is the
// registered one, fenced, not controller-eligible and assigned no replica.
type BrokerUnregistered struct {
	ID          int32 `msgpack:"id"`
	Incarnation int64 `msgpack:"inc"`
}

// TypeBrokerUnregistered is BrokerUnregistered's record type. Part of the
// format: never renumber.
const TypeBrokerUnregistered RecordType = 13

func (BrokerUnregistered) Type() RecordType { return TypeBrokerUnregistered }
func (BrokerUnregistered) Version() uint8   { return 1 }

func init() { typeNames[TypeBrokerUnregistered] = "BrokerUnregistered" }

// UnregisterBrokerEvent asks to remove broker ID's registration.
type UnregisterBrokerEvent struct {
	ID int32
}

// maxNamedPartitions bounds the partitions an unregister refusal lists.
const maxNamedPartitions = 5

// DecideUnregisterBroker returns the BrokerUnregistered that removes
// broker ev.ID. It is refused with BrokerNotRegistered when the id is not
// registered (also after a committed unregister: a client whose earlier
// attempt may have been applied takes that as done), with InvalidRequest
// when the broker is alive, a controller, or holds replicas (naming up to
// five of the partitions), and with
// UnsupportedVersion while an alive broker's build applies less than
// version 3. Fenced brokers do not count, unlike for other version-3
// changes, so that several decommissioned brokers of old builds can all be
// removed: none of them serves, an old build coming back is refused at
// registration once the record raised the cluster's version, and one whose
// process still runs stops when it applies the record ("upgrade this
// node") rather than diverge.
func DecideUnregisterBroker(img *Image, ev UnregisterBrokerEvent) ([]Record, error) {
	b, ok := img.Broker(ev.ID)
	if !ok {
		return nil, werr(wire.BrokerNotRegistered, "broker %d is not registered", ev.ID)
	}
	if why := unregisterBlocker(img, b); why != "" {
		return nil, werr(wire.InvalidRequest, "broker %d %s", ev.ID, why)
	}
	gone := func(x BrokerState) bool { return x.ID == ev.ID || x.Fenced }
	if err := requireVersionSkipping(img, 3, "unregistering a broker", gone); err != nil {
		return nil, err
	}
	return []Record{BrokerUnregistered{ID: b.ID, Incarnation: b.Incarnation}}, nil
}

// unregisterBlocker says why b cannot be unregistered ("" if it can).
func unregisterBlocker(img *Image, b BrokerState) string {
	switch {
	case !b.Fenced:
		return "is alive: stop it for good first (a running broker registers again)"
	case b.ControllerEligible:
		return "is a controller (listed in --controllers): the controller quorum cannot change"
	}
	parts := img.PartitionsOf(b.ID)
	if len(parts) == 0 {
		return ""
	}
	var names []string
	for _, p := range parts[:min(len(parts), maxNamedPartitions)] {
		names = append(names, fmt.Sprintf("%s-%d", p.Topic, p.Partition))
	}
	more := ""
	if len(parts) > maxNamedPartitions {
		more = fmt.Sprintf(" and %d more", len(parts)-maxNamedPartitions)
	}
	return fmt.Sprintf("still holds replicas of %d partitions (%s%s): move them to other brokers first (topic reassign)",
		len(parts), strings.Join(names, ", "), more)
}

// applyBrokerUnregistered applies r; it returns a non-empty reason when
// rejected.
func (b *builder) applyBrokerUnregistered(r BrokerUnregistered) string {
	cur, why := b.brokerIncarnation(r.ID, r.Incarnation)
	if why != "" {
		return why
	}
	if why := unregisterBlocker(b.next, cur); why != "" {
		return why
	}
	b.touchBroker(r.ID) // the delta shows it with New nil
	delete(b.next.brokers, r.ID)
	b.useVersion(3)
	return ""
}
