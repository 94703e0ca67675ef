package bench

// How exactly a trial knows when its victim died. The bench's own local
// cluster sends the SIGKILL itself at the start of kill, so the instant taken
// just before the call is the kill (to within microseconds). An external
// cluster's --kill-cmd runs a shell that starts up, finds the process, sends
// the SIGKILL and (scripts/cluster.sh) waits for it to be gone: the SIGKILL
// comes somewhere between the command's start and its return. A trial's
// times are measured from the command's start, so every figure is an upper
// bound, at most the trial's kill_cmd_ms above the true one; measuring from
// the return instead would be a lower bound, and a target met by a lower
// bound proves nothing. The report says which of the two it is.

// Values of FailoverResult.KillInstant and ControllerResult.KillInstant.
const (
	// KillInstantSignal: the bench sent the SIGKILL itself; times are exact.
	KillInstantSignal = "sigkill"
	// KillInstantCmdStart: times run from the start of --kill-cmd and are
	// upper bounds (see kill_cmd_ms).
	KillInstantCmdStart = "kill_cmd_start"
)

// killInstant says from which instant target t's kill times are measured.
func killInstant(t target) string {
	if t.exactKill() {
		return KillInstantSignal
	}
	return KillInstantCmdStart
}

// upperBoundNote is the table's explanation of KillInstantCmdStart times.
const upperBoundNote = "the start of --kill-cmd: the SIGKILL came up to the command's own run later, so the times below are upper bounds"

// boundSuffix marks a target checked against an upper bound.
func boundSuffix(instant string) string {
	if instant == KillInstantCmdStart {
		return " (upper bound: from the start of --kill-cmd)"
	}
	return ""
}
