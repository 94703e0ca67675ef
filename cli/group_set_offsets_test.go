package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"paymentlog/client/clienttest"
	"paymentlog/node/metadata"
	"paymentlog/wire"
)

// committed returns group's committed offsets of topic t as "p0=O p1=O".
func committed(fc *clienttest.Cluster, group string) string {
	var b []string
	for _, o := range fc.GroupOffsets(group) {
		b = append(b, fmt.Sprintf("p%d=%d", o.Partition, o.Offset))
	}
	return strings.Join(b, " ")
}

// group set-offsets --shift-by moves committed offsets, kept between the
// log start and the high watermark with a note per partition kept;
// only --execute commits (without it the plan is printed with a hint;
// --dry-run without the hint); --export prints what --from-file reads; and a
// file (or stdin) sets the offsets it lists.
func TestGroupSetOffsetsShiftDryRunAndFile(t *testing.T) {
	fc := groupTopic(t) // t: partition 0 holds offsets 0-5, partition 1 0-3
	bs := "--bootstrap=" + fc.Bootstrap()
	run := func(stdin string, args ...string) (string, string) {
		t.Helper()
		out, errOut, code := runClientCLI(t, strings.NewReader(stdin), append(append([]string{"group", "set-offsets"}, args...), bs)...)
		if code != 0 {
			t.Fatalf("set-offsets %s: exit %d, stderr %q", strings.Join(args, " "), code, errOut)
		}
		return out, errOut
	}
	out, errOut := run("", "g", "t", "--to", "3")
	if out != "TOPIC  PARTITION  BEFORE  OFFSET\nt      0          -       3\nt      1          -       3\n" ||
		errOut != "dry run: nothing committed; add --execute to commit these offsets\n" {
		t.Fatalf("--to 3 without --execute: stdout %q, stderr %q", out, errOut)
	}
	if got := committed(fc, "g"); got != "" {
		t.Fatalf("--to 3 without --execute committed: %s", got)
	}
	run("", "g", "t", "--to", "3", "--execute")
	if got := committed(fc, "g"); got != "p0=3 p1=3" {
		t.Fatalf("after --to 3: %s", got)
	}

	out, errOut = run("", "g", "t", "--shift-by", "-2", "--dry-run")
	if out != "TOPIC  PARTITION  BEFORE  OFFSET\nt      0          3       1\nt      1          3       1\n" || errOut != "dry run: nothing committed\n" {
		t.Fatalf("--shift-by -2 --dry-run: stdout %q, stderr %q", out, errOut)
	}
	if got := committed(fc, "g"); got != "p0=3 p1=3" {
		t.Fatalf("--dry-run committed: %s", got)
	}

	out, errOut = run("", "g", "--shift-by", "2", "t", "--execute") // flags before and after the arguments
	if out != "TOPIC  PARTITION  BEFORE  OFFSET\nt      0          3       5\nt      1          3       4\n" ||
		errOut != "partition 1: 3 shifted by 2 is past the high watermark 4; setting 4\n" {
		t.Fatalf("--shift-by 2: stdout %q, stderr %q", out, errOut)
	}
	if got := committed(fc, "g"); got != "p0=5 p1=4" {
		t.Fatalf("after --shift-by 2: %s", got)
	}
	_, errOut = run("", "g", "t", "--shift-by", "-10", "--partition", "0", "--execute")
	if errOut != "partition 0: 5 shifted by -10 is before the log start 0; setting 0\n" {
		t.Fatalf("--shift-by -10: stderr %q", errOut)
	}
	if got := committed(fc, "g"); got != "p0=0 p1=4" {
		t.Fatalf("after --shift-by -10 --partition 0: %s", got)
	}
	checkOnce(t, 6, consumeLines(t, fc, "--group", "g", "--exit-at-end")) // partition 0 again, nothing of partition 1

	// Save the position, move away, restore it from the file.
	saved, _ := run("", "g", "t", "--shift-by", "0", "--dry-run", "--export")
	if saved != "t,0,6\nt,1,4\n" {
		t.Fatalf("--export: %q", saved)
	}
	run("", "g", "t", "--to", "earliest", "--execute")
	file := filepath.Join(t.TempDir(), "offsets.csv")
	if err := os.WriteFile(file, []byte("# saved before the deploy\n"+saved), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _ = run("", "g", "--from-file", file, "--execute")
	if out != "TOPIC  PARTITION  BEFORE  OFFSET\nt      0          0       6\nt      1          0       4\n" {
		t.Fatalf("--from-file: stdout %q", out)
	}
	if got := committed(fc, "g"); got != "p0=6 p1=4" {
		t.Fatalf("after --from-file: %s", got)
	}
	run("t,1, 2\n\nt, 0,1\n", "g", "--from-file", "-", "--export", "--execute") // stdin, any order, spaces, a blank line
	if got := committed(fc, "g"); got != "p0=1 p1=2" {
		t.Fatalf("after --from-file -: %s", got)
	}
}

// What set-offsets refuses: with exit status 1 what the cluster's offsets
// rule out, with 2 (usage) what is wrong before asking it; nothing is
// committed either way, --execute or not.
func TestGroupSetOffsetsRefusals(t *testing.T) {
	fc := groupTopic(t)
	bs := "--bootstrap=" + fc.Bootstrap()
	if _, errOut, code := runClientCLI(t, nil, "group", "set-offsets", "g", "t", "--to", "2", "--execute", bs); code != 0 {
		t.Fatalf("set-offsets --to 2: %s", errOut)
	}
	dir := t.TempDir()
	files := 0
	file := func(body string) string {
		files++
		f := filepath.Join(dir, fmt.Sprintf("f%d.csv", files))
		if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"new", "t", "--shift-by", "1"}, 1, "partition 0 has no committed offset to shift (set one with --to first)"},
		{[]string{"g", "--from-file", file("t,0,1\nt,5,0\n")}, 1, "line 2: topic t has 2 partitions; no partition 5"},
		{[]string{"g", "--from-file", file("t,1,9\n")}, 1, "line 1: topic t partition 1 has offsets 0 to 4; 9 is outside them"},
		{[]string{"g", "--from-file", file("nope,0,0\n")}, 1, "topic nope (line 1)"},
		{[]string{"g", "t", "--to", "1", "--shift-by", "1"}, 2, "give only one of --to, --shift-by and --from-file"},
		{[]string{"g", "t", "--from-file", file("t,0,1\n")}, 2, "--from-file names the topics: give only the group"},
		{[]string{"g", "--from-file", file("t,0,1\n"), "--partition", "0"}, 2, "--partition does not go with --from-file"},
		{[]string{"--from-file", file("t,0,1\n")}, 2, "missing group name (usage: paymentlog group set-offsets GROUP --from-file FILE)"},
		{[]string{"g", "--from-file", file("t,0\n")}, 2, "line 1: wrong number of fields (want TOPIC,PARTITION,OFFSET)"},
		{[]string{"g", "--from-file", file("t,x,1\n")}, 2, `line 1: partition "x" is not a non-negative number`},
		{[]string{"g", "--from-file", file("t,0,-1\n")}, 2, `line 1: offset "-1" is not a non-negative number`},
		{[]string{"g", "--from-file", file(",0,1\n")}, 2, "line 1: topic name is empty"},
		{[]string{"g", "--from-file", file(`"t,1",0,1` + "\n")}, 2, `line 1: topic name "t,1": only letters`},
		{[]string{"g", "--from-file", file("t,0,1\n# again\nt,0,2\n")}, 2, "line 3: topic t partition 0 is already on line 1"},
		{[]string{"g", "--from-file", file("# nothing\n\n")}, 2, "holds no TOPIC,PARTITION,OFFSET line"},
		{[]string{"g", "--from-file", filepath.Join(dir, "missing.csv")}, 2, "no such file or directory"},
		{[]string{"g", "t", "--to", "now-"}, 2, `--to: "now-" is not earliest`},
		{[]string{"g", "t", "--to", "1", "--dry-run"}, 2, "give --execute or --dry-run, not both"},
	} {
		_, errOut, code := runClientCLI(t, nil, append(append([]string{"group", "set-offsets", "--execute"}, c.args...), bs)...)
		oneErrorLine(t, strings.Join(c.args, " "), code, errOut, c.code, c.want)
	}
	if got := committed(fc, "g"); got != "p0=2 p1=2" {
		t.Fatalf("after the refusals: %s", got)
	}
	if got := committed(fc, "new"); got != "" {
		t.Fatalf("group new after a refused shift: %s", got)
	}
}

// --to now-DURATION is a time: an hour ago is before every record.
func TestGroupSetOffsetsToNowMinus(t *testing.T) {
	fc := groupTopic(t)
	bs := "--bootstrap=" + fc.Bootstrap()
	if _, errOut, code := runClientCLI(t, nil, "group", "set-offsets", "g", "t", "--to", "latest", "--execute", bs); code != 0 {
		t.Fatalf("--to latest: %s", errOut)
	}
	out, errOut, code := runClientCLI(t, nil, "group", "set-offsets", "g", "t", "--to", "now-1h", bs)
	if code != 0 || out != "TOPIC  PARTITION  BEFORE  OFFSET\nt      0          6       0\nt      1          4       0\n" {
		t.Fatalf("--to now-1h: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// FuzzReadOffsetsFile: any bytes give entries or an error, never a panic;
// what is read holds valid names and non-negative numbers, and writing it
// and reading it again gives the same entries.
func FuzzReadOffsetsFile(f *testing.F) {
	f.Add([]byte("payments,0,12\npayments,1,7\n"))
	f.Add([]byte("# saved\n\nt, 0, 3\r\nu,2,0"))
	f.Add([]byte(`"t",0,1` + "\n"))
	f.Add([]byte("t,0,1\nt,0,2\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		es, err := readOffsetsFile(bytes.NewReader(data), "f")
		if err != nil {
			return
		}
		offs := make([]wire.GroupOffset, len(es))
		for i, e := range es {
			if metadata.ValidateTopicName(e.Topic) != nil || e.Partition < 0 || e.Offset < 0 || e.line < 1 {
				t.Fatalf("entry %+v read from %q", e, data)
			}
			offs[i] = e.GroupOffset
		}
		var b bytes.Buffer
		if err := writeOffsetsFile(&b, offs); err != nil {
			t.Fatal(err)
		}
		again, err := readOffsetsFile(&b, "f")
		if err != nil || len(again) != len(es) {
			t.Fatalf("written %q does not read back: %v", b.String(), err)
		}
		for i := range es {
			if again[i].GroupOffset != es[i].GroupOffset {
				t.Fatalf("entry %d: %+v read back as %+v", i, es[i].GroupOffset, again[i].GroupOffset)
			}
		}
	})
}
