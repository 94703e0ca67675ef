package cli

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"
)

// checkAtLeastOnce checks the source offsets a target partition's records
// name after a crash whose last commit was c: 0..k-1 (what reached the
// target before the crash, k >= c), then c..end-1 (the rerun from the
// commit): every offset at least once, in order, repeats only from c on.
// It returns the number of repeats, k - c.
func checkAtLeastOnce(t *testing.T, p int32, offs []int64, c, end int64) int64 {
	t.Helper()
	k := int64(len(offs)) - (end - c)
	want := append(offsetRange(0, k), offsetRange(c, end)...)
	if k < c || !slices.Equal(offs, want) {
		t.Fatalf("partition %d: the target holds source offsets %v; want 0..k-1 then %d..%d (k >= %d, the commit at the crash)",
			p, compactRanges(offs), c, end-1, c)
	}
	return k - c
}

func offsetRange(from, to int64) []int64 {
	var out []int64
	for o := from; o < to; o++ {
		out = append(out, o)
	}
	return out
}

// compactRanges writes offs as runs, "[0-99 50-199]", for messages.
func compactRanges(offs []int64) []string {
	var out []string
	for i := 0; i < len(offs); {
		j := i
		for j+1 < len(offs) && offs[j+1] == offs[j]+1 {
			j++
		}
		out = append(out, fmtRange(offs[i], offs[j]))
		i = j + 1
	}
	return out
}

func fmtRange(a, b int64) string {
	if a == b {
		return strconv.FormatInt(a, 10)
	}
	return strconv.FormatInt(a, 10) + "-" + strconv.FormatInt(b, 10)
}

// (c) A mirror interrupted mid-stream commits exactly what reached the
// target, and the next run goes on from there without a repeat. A mirror
// that crashes (no commit at the end; the records in flight still land)
// leaves the records after its last commit to be mirrored again: the
// target then holds every source offset at least once, in order, repeats
// only from the commit on.
func TestMirrorResumesAfterInterruptAndCrash(t *testing.T) {
	e := startMirrorEnv(t)
	const parts, n = 3, 3000
	createTopicN(t, e, "t", parts)
	for p := range int32(parts) {
		produceRecords(t, e.srcC, "t", p, 0, n)
	}
	var errb lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := e.options("t")
	opts.hooks.afterForward = func(forwarded int) bool {
		if forwarded == 1500 {
			cancel() // as Ctrl-C does
		}
		return false
	}
	if err := runMirror(ctx, opts, &errb); err != nil {
		t.Fatalf("interrupted mirror: %v; stderr %q", err, errb.String())
	}
	committed := groupOffsets(t, e.srcC, defaultMirrorGroup, "t")
	dst := readPartitions(t, e.dstC, "t")
	var total int64
	for p := range int32(parts) {
		if got := sourceOffsets(t, "t", p, dst[p]); !slices.Equal(got, offsetRange(0, committed[p])) {
			t.Fatalf("after the interrupt, partition %d holds source offsets %v; want those below %d (the commit)", p, compactRanges(got), committed[p])
		}
		total += committed[p]
	}
	if total < 1500 || total >= parts*n {
		t.Fatalf("interrupted after 1500 records, committed %v", committed)
	}

	// A crash 2500 records later, committing before every poll meanwhile.
	opts.commitInterval = time.Nanosecond
	opts.hooks.afterForward = func(forwarded int) bool { return forwarded == 2500 }
	if err := runMirror(context.Background(), opts, &errb); err != nil {
		t.Fatalf("crashed mirror: %v; stderr %q", err, errb.String())
	}
	atCrash := groupOffsets(t, e.srcC, defaultMirrorGroup, "t")
	var before int64
	for p := range int32(parts) {
		before += atCrash[p]
	}
	if before < total || before >= parts*n {
		t.Fatalf("committed %v at the crash, %v before it", atCrash, committed)
	}
	opts.hooks, opts.exitAtEnd = mirrorHooks{}, true
	if err := runMirror(context.Background(), opts, &errb); err != nil {
		t.Fatalf("mirror after the crash: %v; stderr %q", err, errb.String())
	}
	dst = readPartitions(t, e.dstC, "t")
	var repeats int64
	for p := range int32(parts) {
		repeats += checkAtLeastOnce(t, p, sourceOffsets(t, "t", p, dst[p]), atCrash[p], n)
	}
	if repeats == 0 {
		// The records forwarded from the crash's poll on were not
		// committed, and reached the target before the rerun.
		t.Fatalf("no record mirrored twice: the crash committed everything (%v)", atCrash)
	}
	if got := groupOffsets(t, e.srcC, defaultMirrorGroup, "t"); got[0] != n || got[1] != n || got[2] != n {
		t.Fatalf("committed %v at the end; want %d each", got, n)
	}
}
