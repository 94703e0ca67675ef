package node

import (
	"fmt"
	"slices"

	"paymentlog/raftnode"
	"paymentlog/wire"
)

// How a vote-guarded controller's wait ends (rejoinAnswers.target).
const (
	howCaughtUpPeers = "caught-up peers"
	howFirstStart    = "first start"
	howWitnessed     = "first-start witness"
)

// rejoinAnswers collects the DescribeQuorum answers a vote-guarded
// controller gets from the other controllers, round by round, and decides
// its catch-up target (see rejoin.go). No I/O, no clock.
type rejoinAnswers struct {
	self  int32
	nonce string // this node's guard nonce ("" = none: never vouched for)

	others int // controllers other than this one
	need   int // unguarded answers needed: rejoinAnswersNeeded
	// firstStart is how many answers, none past term 1, make a first
	// start: every other controller, or with Config.FirstStartWithMajority
	// a majority less this node.
	firstStart int
	// round numbers the rounds of questions, from 1 (newRound); a round's
	// questions are all sent after the previous round's answers arrived.
	round  int
	latest map[int32]wire.DescribeQuorumResponse
	// answered is the round of each controller's latest answer.
	answered map[int32]int
	// nonces holds, for each controller whose latest answer is guarded
	// with a nonce, that nonce and the first round it was seen in.
	nonces map[int32]seenNonce
	// Invariant: index and term are the highest LastIndex and Term of every
	// unguarded answer so far; unguarded holds the ids that gave one.
	unguarded   map[int32]bool
	index, term uint64
}

type seenNonce struct {
	nonce string
	since int // round
}

// init prepares for a group of controllers voters, this node (id self, guard
// nonce nonce) included.
func (g *rejoinAnswers) init(self int32, nonce string, controllers int, firstStartWithMajority bool) {
	g.self, g.nonce = self, nonce
	g.others = controllers - 1
	g.need = rejoinAnswersNeeded(controllers)
	g.firstStart = g.others
	if firstStartWithMajority {
		g.firstStart = controllers / 2 // majority - 1
	}
	g.latest = map[int32]wire.DescribeQuorumResponse{}
	g.answered = map[int32]int{}
	g.nonces = map[int32]seenNonce{}
	g.unguarded = map[int32]bool{}
}

// newRound starts a round of questions: call it before sending them.
func (g *rejoinAnswers) newRound() { g.round++ }

// add records controller id's answer in the current round.
func (g *rejoinAnswers) add(id int32, resp wire.DescribeQuorumResponse) {
	g.latest[id] = resp
	g.answered[id] = g.round
	switch {
	case !resp.Guarded || resp.GuardNonce == "":
		delete(g.nonces, id)
	case g.nonces[id].nonce != resp.GuardNonce:
		g.nonces[id] = seenNonce{resp.GuardNonce, g.round}
	}
	if !resp.Guarded {
		g.unguarded[id] = true
		g.index, g.term = max(g.index, resp.LastIndex), max(g.term, resp.Term)
	}
}

// target returns the catch-up target once it is known, in one of three
// ways (how):
//
//   - "first-start witness": an unguarded controller's latest answer lists
//     this node's id with this node's (non-empty) guard nonce among its
//     first-start witnesses (see witnesses): the guard may lift at once, no
//     target (index and term 0).
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
	if _, ok := g.vouchedBy(); ok {
		return 0, 0, howWitnessed, true
	}
	if len(g.unguarded) >= g.need {
		return g.index, g.term, howCaughtUpPeers, true
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
	return index, term, howFirstStart, true
}

// vouchedBy returns the lowest id of an unguarded controller whose latest
// answer lists this node with its own guard nonce as a first-start witness.
func (g *rejoinAnswers) vouchedBy() (int32, bool) {
	if g.nonce == "" {
		return 0, false
	}
	for _, id := range sortedKeys(g.latest) {
		r := g.latest[id]
		if !r.Guarded && r.Witnessed[g.self] == g.nonce {
			return id, true
		}
	}
	return 0, false
}

// witnesses returns the first-start witnesses this node may vouch for once
// its guard lifts as a first start (wire.DescribeQuorumResponse.Witnessed):
// the guarded controllers G whose nonce was seen in a round before the
// round of every other controller's latest answer. Those answers all came
// after G's storage (named by its nonce) existed, none past term 1: no
// leader had been elected by then, so G's storage held nothing but the
// bootstrap entries and no vote that elected anyone, and kept since then (its
// marker and nonce unchanged) it holds everything G ever acknowledged.
//
// None (nil) unless the answers make a first start in which every other
// controller answered (not a FirstStartWithMajority one: controllers not
// asked may hold entries that the guarded one acknowledged before it lost its
// log) and ownTerm, this node's raft term, is at most 1 (its log saw no
// election either).
func (g *rejoinAnswers) witnesses(ownTerm uint64) map[int32]string {
	if _, _, how, ok := g.target(); !ok || how != howFirstStart || len(g.latest) < g.others || ownTerm > 1 {
		return nil
	}
	var out map[int32]string
	for id, s := range g.nonces {
		later := true
		for x := range g.latest {
			if x != id && g.answered[x] <= s.since {
				later = false
				break
			}
		}
		if later {
			if out == nil {
				out = map[int32]string{}
			}
			out[id] = s.nonce
		}
	}
	return out
}

// vouchFor returns what this node vouches for once its guard lifts: own
// (its first-start witnesses, see witnesses) and the first-start witnesses
// of every unguarded controller's latest answer, without its own id, ids
// that are not controllers (known, from --controllers) and strings that are
// not nonces (what it passes on it keeps in memory). Each
// entry is a fact about the cluster's first start, true whoever tells it,
// so a controller that another vouched for, or that caught up, passes the
// witnesses on: the one that made them may be the controller that died. For
// an id named with different nonces, own wins, then the lowest answering
// id. nil if there is none.
func (g *rejoinAnswers) vouchFor(own map[int32]string, known func(int32) bool) map[int32]string {
	var out map[int32]string
	merge := func(w map[int32]string) {
		for id, nonce := range w {
			if _, ok := out[id]; ok || id == g.self || !known(id) || !raftnode.IsGuardNonce(nonce) {
				continue
			}
			if out == nil {
				out = map[int32]string{}
			}
			out[id] = nonce
		}
	}
	merge(own)
	for _, id := range sortedKeys(g.latest) {
		if r := g.latest[id]; !r.Guarded {
			merge(r.Witnessed)
		}
	}
	return out
}

// nonced is how many controllers' latest answers are guarded with a nonce.
func (g *rejoinAnswers) nonced() int { return len(g.nonces) }

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
