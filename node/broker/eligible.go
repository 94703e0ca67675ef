package broker

// SetEligibleBrokers gives the brokers the metadata shows live (registered,
// neither fenced nor shutting down), each with its registered incarnation:
// a leader proposes adding a follower to an ISR only when its fetches come
// from that incarnation (replica.Config.Eligible), as the controller
// accepts no other. A broker that becomes eligible (unfenced, or registered
// again) has every partition tick at once, so a follower that caught up
// while its registration was still fenced is proposed now, not at the next
// tick. Until the first call every follower counts as eligible. The broker
// keeps live: the caller must not change it afterwards.
func (b *Broker) SetEligibleBrokers(live map[int32]int64) {
	prev := b.eligible.Swap(&live)
	grew := prev == nil
	if prev != nil {
		for id, inc := range live {
			if was, ok := (*prev)[id]; !ok || was != inc {
				grew = true
				break
			}
		}
	}
	if !grew {
		return
	}
	now := b.cfg.Now()
	for _, p := range b.partitions() {
		p.tick(now)
	}
}

// eligibleFollower is replica.Config.Eligible: broker id is live in the
// metadata with incarnation inc.
func (b *Broker) eligibleFollower(id int32, inc int64) bool {
	m := b.eligible.Load()
	if m == nil {
		return true
	}
	reg, ok := (*m)[id]
	return ok && reg == inc
}
