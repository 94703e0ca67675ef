package chaos

import (
	"fmt"
	"slices"
)

// checkSchedulable reports why a schedule of kinds (what is left of the
// requested kinds once those that cannot run here are removed) would not
// inject what was asked: no kind a fault can be dealt from (torn-tail rides
// on kills, it is never dealt alone), or torn tails without any kill to
// ride on. Without this check an empty set of kinds became every kind
// (Plan's default), torn-tail alone dealt empty decks (a bounded run with
// no fault, a timed run that panicked), and torn tails with only pauses
// never happened.
func checkSchedulable(kinds []Kind, requested []Kind, why string) error {
	dealt := slices.ContainsFunc(kinds, func(k Kind) bool { return k != TornTail })
	kills := slices.ContainsFunc(kinds, Kind.IsKill)
	suffix := ""
	if why != "" {
		suffix = " (" + why + ")"
	}
	switch {
	case !dealt:
		return fmt.Errorf("chaos: no fault kind left to schedule of %v%s: torn-tail rides on a kill and is never scheduled alone", requested, suffix)
	case slices.Contains(kinds, TornTail) && !kills:
		return fmt.Errorf("chaos: torn-tail needs a kill kind (kill-node, kill-leader or kill-controller) to ride on; scheduled %v", kinds)
	}
	return nil
}
