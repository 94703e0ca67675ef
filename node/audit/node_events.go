package audit

import (
	"encoding/json"
	"os"
)

// Node events (event "node"): what PCI DSS 10.2.1.6 and 10.2.1.5 ask to be
// recorded besides requests: the trail starting and stopping with its node,
// and changes to the credentials the node authenticates with.
const (
	OpStart     = "start"      // the node started; details.previous says how the last run ended
	OpStop      = "stop"       // the node stopped (a controlled shutdown, or failed: result "error")
	OpTLSReload = "tls-reload" // new certificate, ca.crt or revoked.txt in force, or a reload refused
)

// How the run before a start ended (the start line's details.previous), as
// the file shows it.
const (
	PreviousNone    = "new audit log"                                                    // the file was empty (or the trail goes to the node's log)
	PreviousStopped = "stopped"                                                          // its last line is this node's stop line
	PreviousNoStop  = "no stop line: the previous run was killed, crashed or lost power" // any other last line
)

// StartDetails are a start line's details.
type StartDetails struct {
	Version  string `json:"version"`
	PID      int    `json:"pid"`
	Previous string `json:"previous,omitempty"` // "" when the trail goes to the node's log
}

// Started writes the start line of the node's run: who is the node itself
// (its certificate's principal and its listening address).
func (l *Log) Started(who Who, version string) {
	if l == nil {
		return
	}
	l.nodeLine(who, OpStart, nil, "", StartDetails{Version: version, PID: os.Getpid(), Previous: l.previous})
}

// Stopped writes the stop line: cause is nil for a controlled shutdown,
// else the error that ended the node (result "error").
func (l *Log) Stopped(who Who, cause error) {
	if l == nil {
		return
	}
	l.nodeLine(who, OpStop, cause, ResultError, nil)
}

// TLSReloaded writes a tls-reload line: details describes what changed (any
// value encoding/json takes); refused is the error of a refused reload.
func (l *Log) TLSReloaded(who Who, details any, refused error) {
	if l == nil {
		return
	}
	l.nodeLine(who, OpTLSReload, refused, ResultRefused, details)
}

// nodeLine writes a node line for op: result ok, or errResult with err's
// message when err is set; details as given (nil: none).
func (l *Log) nodeLine(who Who, op string, err error, errResult string, details any) {
	result, msg := ResultOK, ""
	if err != nil {
		result, msg = errResult, err.Error()
	}
	ln := l.newLine(EventNode, who, op, result, msg)
	ln.Details = rawJSON(details)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.write(&ln)
}

// previousRun says how the run that wrote last (the file's last line)
// ended, for node.
func previousRun(last []byte, node int32) string {
	if len(last) == 0 {
		return PreviousNone
	}
	var ln struct {
		Node  int32  `json:"node"`
		Event string `json:"event"`
		Op    string `json:"op"`
	}
	if json.Unmarshal(last, &ln) == nil && ln.Node == node && ln.Event == EventNode && ln.Op == OpStop {
		return PreviousStopped
	}
	return PreviousNoStop
}
