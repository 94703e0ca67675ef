package node

import (
	"fmt"
	"slices"

	"paymentlog/wire"
)

// rejoinAnswers collects the DescribeQuorum answers a vote-guarded
// controller gets from the other controllers, and decides its catch-up
// target (see rejoin.go). No I/O, no clock.
type rejoinAnswers struct {
	others int // controllers other than this one
	need   int // unguarded answers needed: rejoinAnswersNeeded
	// firstStart is how many answers, none past term 1, make a first
	// start: every other controller, or with Config.FirstStartWithMajority
	// a majority less this node.
	firstStart int
	latest     map[int32]wire.DescribeQuorumResponse
	// Invariant: index and term are the highest LastIndex and Term of every
	// unguarded answer so far; unguarded holds the ids that gave one.
	unguarded   map[int32]bool
	index, term uint64
}

// init prepares for a group of controllers voters, this node included.
func (g *rejoinAnswers) init(controllers int, firstStartWithMajority bool) {
	g.others = controllers - 1
	g.need = rejoinAnswersNeeded(controllers)
	g.firstStart = g.others
	if firstStartWithMajority {
		g.firstStart = controllers / 2 // majority - 1
	}
	g.latest = map[int32]wire.DescribeQuorumResponse{}
	g.unguarded = map[int32]bool{}
}

// add records controller id's answer.
func (g *rejoinAnswers) add(id int32, resp wire.DescribeQuorumResponse) {
	g.latest[id] = resp
	if !resp.Guarded {
		g.unguarded[id] = true
		g.index, g.term = max(g.index, resp.LastIndex), max(g.term, resp.Term)
	}
}

// target returns the catch-up target once it is known, in one of two ways:
//
//   - "caught-up peers": need controllers that are not guarded themselves
//     have answered (at any time since this node started); the target is
//     their highest last index and term. Answers from guarded controllers do
//     not count: their logs may lack what they lost.
//   - "first start": every other controller has answered, guarded or not,
//     and none has a term above 1 (the term of the bootstrap entries), so no
//     leader was ever elected — unless a majority of the controllers lost
//     their logs, which nothing could survive. This is how a new cluster,
//     whose controllers all start empty and guarded, forms; it needs every
//     controller up. With Config.FirstStartWithMajority, answers from a
//     majority less this node suffice: a controller that lost its log then
//     cannot tell a first start from the case where the controllers holding
//     the metadata are down and those up never received any.
func (g *rejoinAnswers) target() (index, term uint64, how string, ok bool) {
	if len(g.unguarded) >= g.need {
		return g.index, g.term, "caught-up peers", true
	}
	if len(g.latest) < max(g.firstStart, 1) {
		return 0, 0, "", false
	}
	for _, r := range g.latest {
		if r.Term > 1 {
			return 0, 0, "", false
		}
		index, term = max(index, r.LastIndex), max(term, r.Term)
	}
	return index, term, "first start", true
}

func (g *rejoinAnswers) unguardedIDs() []int32 { return sortedKeys(g.unguarded) }

func (g *rejoinAnswers) guardedIDs() []int32 {
	var out []int32
	for id, r := range g.latest {
		if r.Guarded {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// String summarizes who has answered (for logging changes only).
func (g *rejoinAnswers) String() string {
	return fmt.Sprint(g.unguardedIDs(), g.guardedIDs())
}
