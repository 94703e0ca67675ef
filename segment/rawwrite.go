package segment

import "os"

// WriteEnv names the environment variable that picks how segment files
// are written: "syscall" writes through package os; anything else (the
// default) with raw pwrite calls where the platform has them.
const WriteEnv = "PAYMENTLOG_WRITE"

// rawWrites says whether osFile.WriteAt uses pwriteRaw.
//
// A write through package os tells the Go scheduler the call may block;
// once it has run for sysmon's tick (20 µs) the scheduler hands the
// thread's P to another thread, and the writing thread, back from the
// kernel, queues its goroutine and sleeps until a P is free. Appending a
// produce request's batches is a pwrite of up to a MiB (~0.2–0.5 ms of
// copying into the page cache), so on a node at GOMAXPROCS 1 nearly every
// append paid a hand-off and two thread switches, which cost tens of µs
// each on the virtual machines this was measured on. A raw pwrite keeps
// the P: measured at full load (12 alternating pairs, README Performance),
// the nodes' context switches per produce request fell by 16%, their CPU
// per payload MB by 5%, and throughput rose by 5% (medians of the pairs'
// ratios).
//
// The price: while a write is in the kernel, nothing else of the process
// runs on that P. A buffered write does not wait for the disk, but it can
// wait for the page allocator, the ext4 journal or dirty-page throttling;
// at GOMAXPROCS 1 such a wait delays the node's heartbeats too, and one
// longer than the broker session timeout (250 ms) gets the node fenced,
// as a stuck disk should. Under full load here the longest write took 13 ms
// (wall clock, preemptions included). PAYMENTLOG_WRITE=syscall restores
// the hand-off.
var rawWrites = os.Getenv(WriteEnv) != "syscall"
