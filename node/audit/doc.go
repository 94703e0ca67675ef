// Package audit writes a node's audit trail: one JSON object per line for
// every request that changes the cluster (creating and deleting topics,
// partitions, configs, ACLs, quotas, reassignments, deleted records, a
// group's offsets set by an operator, deleted groups, unregistered
// brokers) as the node that decided it answered it, for every request
// refused by ACL, for clients' reads and writes of topics (access.go), and
// for the node's own start, stop and TLS reloads (node_events.go). A
// payments operator answers "who changed what, who read what, when, from
// where, and was it allowed" from it (PCI DSS requirement 10: 10.2.1.1
// access to cardholder data, .2 administrative actions, .4 refused access,
// .5 credential changes, .6 the trail's start and stop).
//
// # Format
//
// Each line is a JSON object (the keys are part of the format: keys may be
// added, never renamed):
//
//	time          RFC 3339 with nanoseconds, UTC
//	node          the node id that wrote it
//	event         "admin" (a request that changes the cluster, answered here),
//	              "denied" (a request refused by ACL), "access" (a client
//	              read or wrote a topic) or "node" (the node started,
//	              stopped or reloaded its TLS files)
//	principal     "User:" and the client certificate's common name (node
//	              lines: the node's own certificate's)
//	authenticated false in dev mode (no TLS): the name was not verified
//	addr          the client's address (host:port; node lines: the node's)
//	op            admin: the request ("CreateTopic", "AlterConfigs", ...);
//	              denied: the ACL operation ("write", "create", ...), or
//	              "connect" for a handshake refused because of the
//	              peer's certificate: a client's (details.side
//	              "inbound") or that of a peer the node dialed
//	              ("outbound"; addr the address dialed)
//	              (refused_connect.go; resource "cluster", authenticated
//	              false, principal "" when it presented none; result the
//	              reason: "no-certificate", "unknown-ca", "expired",
//	              "not-yet-valid", "bad-usage" (not a client certificate,
//	              or outbound not a server one), "name-mismatch"
//	              (outbound: not for the address dialed),
//	              "bad-certificate" (any other verification failure),
//	              "revoked", or "wrong-node" (either side: a certificate
//	              the handshake accepted, but not the node certificate
//	              of the node id a request claimed or the node dialed;
//	              the call is refused));
//	              access: "read" (Fetch) or "write" (Produce);
//	              node: "start", "stop" or "tls-reload"
//	resource      denied and access: the resource ("topic", "group",
//	              "cluster") and resource_name
//	request       admin only: the request as decoded (its Go field names)
//	result        "ok", or the error code's name ("TopicAuthorizationFailed",
//	              ...; for DeleteRecords the first partition's error),
//	              "malformed" (not decodable) or "error" (the node failed
//	              to answer; message says why)
//	message       the error's message, if any
//	response      admin only: the answer sent (e.g. each partition's result)
//	details       node lines: start: version, pid and previous, how the
//	              run before ended as the file's last line shows it ("new
//	              audit log", "stopped", or "no stop line: ..." when it was
//	              killed or crashed; left out without a file); tls-reload:
//	              serial, previous_serial, ca_changed, revoked_changed, cas
//	              and revoked (counts in force); stop: none (result "error"
//	              and message when the node stopped on an error); a
//	              tls-reload refused has result "refused" and the reason
//	              denied connect: side ("inbound" or "outbound"),
//	              server_name (outbound: the name or address the
//	              certificate was checked against), serial, issuer,
//	              not_before and not_after of the certificate presented
//	              (not verified), expected_node (wrong-node: the node id
//	              claimed or dialed), and repeated, the same refusals (side,
//	              peer host, reason, serial, issuer) not written since the
//	              last line for them (at most one a RefusedRepeatWindow, a
//	              minute)
//	suppressed    denied only: refusals not written since the previous
//	              denied line, over the rate limit (DeniedPerSecond)
//	prev          lines in a file only: the SHA-256 (hex) of the previous
//	              line's bytes, "" for the first line the node wrote there
//	              (chain.go; VerifyChain, `paymentlog log audit-verify`)
//
// Access lines are written the first time a client reads or writes a topic
// on this node, per principal, client address and topic, and again once the
// access interval (SetAccessInterval, `--audit-access-interval`, an hour by
// default) has passed since: a consumer polling all day leaves one line an
// hour per connection, not one per poll. Replication between nodes is not
// recorded.
//
// A request answered NotController (sent to a node that is not the active
// controller, which the client then retries there) is not written: the
// active controller writes it. One answered NotController by a controller
// that lost the role after proposing the change is written, with that
// result: the change may still commit. A request the node could not decode is
// written with result "malformed".
//
// # Durability
//
// With a file, each line is appended with one write(2) (O_APPEND) and
// fsynced before the answer leaves the node, so a change acknowledged to
// its maker is in the trail. Denied lines are rate limited (a client
// retrying a refused produce would otherwise fill the disk); the count of
// those left out is carried by the next denied line and by
// paymentlog_audit_suppressed_total. A failed write is logged and counted
// (paymentlog_audit_write_errors_total) and does not fail the request.
// Without a file the lines go to the node's log as "audit" records.
//
// # Rotation
//
// Past SetRotation's size (--audit-log-max-bytes) the file is renamed
// FILE.<UTC time of the rotation> (rotatedTimeFormat) and a new FILE is
// started whose first line's prev is the hash of the renamed file's last
// line: the chain runs across the files, and VerifyTrail (`log
// audit-verify FILE`) checks them in order. Rotated files beyond
// --audit-log-max-files are deleted, oldest first (0, the default: none).
// rotate.go says in what order a rotation writes and why a crash in it
// loses and repeats no line.
package audit
