package metadata

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
)

// Racks (Kafka's broker.rack): a node started with --rack NAME registers
// the failure domain it runs in, a rack or an availability zone. When any
// live broker has one, new replicas are placed so that a partition's
// replicas sit in as many different racks as its replica count allows
// (topic creation, added partitions, a higher replication factor), so
// losing a whole rack leaves every partition whose ISR spans racks an
// in-sync replica elsewhere (nothing keeps the ISR itself spread).
// A broker without a rack counts as a rack of its own. Placement is
// decided by the active controller and recorded as explicit replica lists,
// so builds that ignore racks still apply the same records.

// MaxRackLen bounds a rack name (bytes).
const MaxRackLen = 64

// CheckRack returns why rack is not a valid rack name, or "" when it is:
// empty (none), or up to MaxRackLen characters of [a-zA-Z0-9._:-].
func CheckRack(rack string) string {
	if len(rack) > MaxRackLen {
		return fmt.Sprintf("rack name is %d bytes long, more than %d", len(rack), MaxRackLen)
	}
	for _, c := range rack {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-'
		if !ok {
			return fmt.Sprintf("rack name %q: only letters, digits and . _ : - are allowed", rack)
		}
	}
	return ""
}

// rackKey is the failure domain of a broker: its rack, or one of its own
// (a key no rack name can be) when it has none.
func rackKey(id int32, rack string) string {
	if rack == "" {
		return "\x00" + strconv.Itoa(int(id))
	}
	return rack
}

// Racks maps the brokers of ids to their failure domains (rackKey), or
// returns nil when none of them has a rack: placement then ignores racks.
func (m *Image) Racks(ids []int32) map[int32]string {
	return RackKeys(ids, func(id int32) string {
		if b, ok := m.Broker(id); ok {
			return b.Rack
		}
		return ""
	})
}

// RackKeys maps ids to their failure domains (rackKey of rack(id)), or
// returns nil when rack gives none of them a rack.
func RackKeys(ids []int32, rack func(int32) string) map[int32]string {
	out := make(map[int32]string, len(ids))
	some := false
	for _, id := range ids {
		r := rack(id)
		some = some || r != ""
		out[id] = rackKey(id, r)
	}
	if !some {
		return nil
	}
	return out
}

// RackAlternated orders brokers so that racks alternate (Kafka's
// rack-alternated broker list): the lowest id of every rack, racks in
// name order, then the second lowest of each, and so on. Walking it
// round-robin places consecutive replicas in different racks, and leaders
// spread over racks.
func RackAlternated(brokers []int32, racks map[int32]string) []int32 {
	by := map[string][]int32{}
	for _, b := range brokers {
		by[racks[b]] = append(by[racks[b]], b)
	}
	names := make([]string, 0, len(by))
	for r, bs := range by {
		names = append(names, r)
		slices.Sort(bs)
	}
	slices.SortFunc(names, cmp.Compare)
	out := make([]int32, 0, len(brokers))
	for i := 0; len(out) < len(brokers); i++ {
		for _, r := range names {
			if i < len(by[r]) {
				out = append(out, by[r][i])
			}
		}
	}
	return out
}

// DistinctRacks counts the racks of brokers.
func DistinctRacks(brokers []int32, racks map[int32]string) int {
	seen := map[string]bool{}
	for _, b := range brokers {
		seen[racks[b]] = true
	}
	return len(seen)
}

// assignRangeRacks is assignRange with racks (Kafka's rack-aware
// assignment): arranged is RackAlternated; partition p's leader is
// arranged[(start+p) % len]; its followers are taken walking the others
// from a shift that grows after every len partitions, skipping a broker
// whose rack already holds one of p's replicas until every rack holds one.
func assignRangeRacks(arranged []int32, racks map[int32]string, from, n, rf, start, shift int) [][]int32 {
	nb := len(arranged)
	nr := DistinctRacks(arranged, racks)
	out := make([][]int32, n)
	for i := range n {
		p := from + i
		ps := shift + p/nb
		first := (p + start) % nb
		reps := make([]int32, 0, rf)
		reps = append(reps, arranged[first])
		used := map[string]bool{racks[arranged[first]]: true}
		// Every non-leader broker comes up once per nb-1 steps, so a
		// broker of an unused rack (while there is one) or any broker not
		// yet chosen (rf <= nb) is found within rf*(nb-1) steps.
		for k := 0; len(reps) < rf; k++ {
			b := arranged[(first+1+(ps*nr+k)%(nb-1))%nb]
			if slices.Contains(reps, b) || (used[racks[b]] && len(used) < nr) {
				continue
			}
			reps = append(reps, b)
			used[racks[b]] = true
		}
		out[i] = reps
	}
	return out
}

// assignPartitions assigns rf replicas to partitions from..from+n-1 over
// the live brokers, continuing the placement of the topic's existing
// partitions (their replica lists, in partition order; none for a new
// topic, which is placed from seed): rack-aware when any live broker has a
// rack, else as before racks.
func assignPartitions(img *Image, live []int32, existing [][]int32, from, n, rf int, seed uint64) [][]int32 {
	racks := img.Racks(live)
	if racks == nil {
		var first []int32
		if len(existing) > 0 {
			first = existing[0]
		}
		start, shift := continuePlacement(live, first, seed)
		return assignRange(live, from, n, rf, start, shift)
	}
	arranged := RackAlternated(live, racks)
	start, shift := continueRackPlacement(arranged, existing, seed)
	return assignRangeRacks(arranged, racks, from, n, rf, start, shift)
}

// continueRackPlacement returns the start and shift (see assignRangeRacks)
// that placed the existing partitions over arranged: the start is the
// index of partition 0's leader (from seed for a new topic), and the shift
// is always the start (as Kafka's rack-aware assignment does when it adds
// partitions), so that partition 0 alone tells both and a topic grown in
// steps is placed as one created with its final count.
func continueRackPlacement(arranged []int32, existing [][]int32, seed uint64) (start, shift int) {
	start = int(seed % uint64(len(arranged)))
	if len(existing) > 0 && len(existing[0]) > 0 {
		if i := slices.Index(arranged, existing[0][0]); i >= 0 {
			start = i
		}
	}
	return start, start
}
