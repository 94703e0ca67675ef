// Package localcluster runs a paymentlog cluster on this machine as child
// processes of a paymentlog binary, for the built-in benchmark
// (`paymentlog bench`) and for the multi-process chaos tests.
//
// Each node gets a free 127.0.0.1 UDP port, its own data directory, its own
// certificate (issued with `paymentlog cert`), and its own log file, all under
// one temporary directory that Close removes unless Options.Keep is set:
//
//	<dir>/certs/                 ca.crt, node<N>.crt/.key, client.crt/.key
//	<dir>/node<N>/data/          the node's --data-dir
//	<dir>/node<N>/node.log       stdout and stderr of every incarnation, appended
//
// # Lifecycle
//
//	c, err := localcluster.Start(ctx, localcluster.Options{Binary: bin, Nodes: 3})
//	defer c.Close()
//	c.Kill(1)                  // SIGKILL, waits for the exit
//	c.Restart(ctx, 1)          // starts it again on the same address and data
//	err = c.WaitFor(ctx, func(ctx context.Context) (bool, error) { ... })
//
// Start returns once every node runs and, unless Options.NoWait, the cluster
// is ready (a controller is elected and every node is registered and alive).
// Close kills every child with SIGKILL, waits for them, shuts down the
// metadata helpers' endpoint and removes the directory (unless Keep). Children are also killed if
// the parent dies: on Linux they run in their own process group with
// Pdeathsig=SIGKILL, forked from one OS thread that stays alive as long as the
// Cluster, since Linux ties Pdeathsig to the forking thread.
//
// # Fault injection
//
// Kill (SIGKILL), Stop (SIGTERM: controlled shutdown, then wait), Pause and
// Resume (SIGSTOP/SIGCONT) act on the node's whole process group, so a wrapper
// command that forks (Options.Command) is covered too. A node that exits without
// having been signalled by the Cluster is recorded as a crash (Crashes), with
// the part of its log that incarnation wrote (Crash.Output).
//
// # Hooks for network namespaces
//
// Options.Addr chooses a node's address (e.g. a veth address inside its
// namespace), Options.Command rewrites the argv that starts a node (e.g. a
// prefix "ip", "netns", "exec", "ns1"), and Options.BeforeStart runs before
// every start of a node (e.g. to create the namespace once).
package localcluster
