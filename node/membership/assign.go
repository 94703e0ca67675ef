package membership

import (
	"cmp"
	"slices"
)

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (a TopicPartition) compare(b TopicPartition) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}

// Partitions says how many partitions a topic has (ok false: it does not
// exist).
type Partitions func(topic string) (n int32, ok bool)

// target computes a group's target assignment: every partition of every
// topic some member subscribes to goes to one member subscribed to it.
// Per topic, each subscribed member gets n/k or n/k+1 of its n partitions
// (k members), and a partition stays with its previous owner (prev)
// whenever that keeps the balance (sticky, so a member joining or leaving
// moves as few partitions as it can). Deterministic: the same members,
// subscriptions, topics and prev give the same result.
func target(members []*member, topics Partitions, prev map[TopicPartition]string) map[TopicPartition]string {
	subscribed := map[string][]string{} // topic -> member ids, sorted
	for _, m := range members {         // members are sorted by id
		for _, t := range m.topics {
			subscribed[t] = append(subscribed[t], m.id)
		}
	}
	names := make([]string, 0, len(subscribed))
	for t := range subscribed {
		names = append(names, t)
	}
	slices.Sort(names)
	out := map[TopicPartition]string{}
	total := map[string]int{} // partitions per member over every topic so far
	for _, t := range names {
		n, ok := topics(t)
		if !ok || n <= 0 {
			continue
		}
		ids := subscribed[t]
		base, extra := int(n)/len(ids), int(n)%len(ids)
		count := map[string]int{}
		var free []int32
		keep := func(p int32, limit int) bool {
			o, ok := prev[TopicPartition{t, p}]
			if !ok || !slices.Contains(ids, o) || count[o] >= limit {
				return false
			}
			out[TopicPartition{t, p}] = o
			count[o]++
			return true
		}
		for p := range n { // previous owners keep up to base
			if !keep(p, base) {
				free = append(free, p)
			}
		}
		var rest []int32
		for _, p := range free { // and one more, for up to extra of them
			if extra > 0 && keep(p, base+1) {
				extra--
				continue
			}
			rest = append(rest, p)
		}
		for _, p := range rest { // the others to the members with the fewest
			best := ""
			for _, id := range ids {
				if count[id] >= base+1 || (count[id] == base && extra == 0) {
					continue
				}
				if best == "" || count[id] < count[best] ||
					(count[id] == count[best] && total[id] < total[best]) {
					best = id
				}
			}
			if count[best] == base {
				extra--
			}
			out[TopicPartition{t, p}] = best
			count[best]++
		}
		for id, c := range count {
			total[id] += c
		}
	}
	return out
}
