package cli

import (
	"strings"
	"testing"
)

// A "--" after the positional argument ends the flags; it is not a second argument.
func TestFlagsAfterPositionalWithDoubleDash(t *testing.T) {
	fc := startFakeCluster(t)
	fc.CreateTopic("payments", 1)
	for _, args := range [][]string{
		{"produce", "payments", "--bootstrap", fc.Bootstrap(), "--json", "--"},
		{"produce", "--bootstrap", fc.Bootstrap(), "payments", "--json", "--"},
		{"produce", "--bootstrap", fc.Bootstrap(), "--json", "--", "payments"},
	} {
		out, errOut, code := runClientCLI(t, strings.NewReader("a\n"), args...)
		if code != 0 || !strings.Contains(out, `"offset"`) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	// After "--", a flag-looking word is an argument.
	_, errOut, code := runClientCLI(t, nil, "produce", "--bootstrap", fc.Bootstrap(), "payments", "--", "--json")
	if code != 2 || !strings.Contains(errOut, "expected one topic") {
		t.Errorf("produce payments -- --json: exit %d, stderr %q", code, errOut)
	}
}

// A flag value that does not parse is one line on stderr and exit status 2,
// with nothing on stdout.
func TestBadFlagValueIsOneLineUsageError(t *testing.T) {
	for _, args := range [][]string{
		{"produce", "payments", "--linger", "xx"},
		{"consume", "payments", "--max", "many"},
		{"topic", "create", "payments", "--timeout", "bogus"},
		{"topic", "create", "payments", "--partitions=three"},
		{"produce", "payments", "--no-such-flag"},
	} {
		out, errOut, code := runClientCLI(t, nil, args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "paymentlog: ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
}

// The error names the flag as --help and the README spell it: Go's flag
// package writes "-partition".
func TestBadFlagErrorNamesTheLongFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"produce", "payments", "--partition", "abc"}, `invalid value "abc" for flag --partition: `},
		{[]string{"produce", "payments", "--json=maybe"}, `invalid boolean value "maybe" for --json: `},
		{[]string{"produce", "payments", "--no-such-flag"}, "flag provided but not defined: --no-such-flag"},
		{[]string{"cert", "issue", "--dir", "d", "--name", "n", "--node-id", "one"}, `for flag --node-id: `},
	} {
		_, errOut, code := runClientCLI(t, nil, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
}

// A flag that takes a value but ends the command line is reported as missing
// its value: the argument reordering once handed it the topic before it
// ("invalid value \"x\" for flag --partition").
func TestTrailingFlagWithoutValueIsNamed(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"produce", "x", "--partition"}, "flag needs an argument: --partition"},
		{[]string{"produce", "x", "--json", "--partition"}, "flag needs an argument: --partition"},
		{[]string{"consume", "x", "--from"}, "flag needs an argument: --from"},
		{[]string{"topic", "create", "x", "--partitions"}, "flag needs an argument: --partitions"},
		{[]string{"produce", "--partition"}, "flag needs an argument: --partition"},
	} {
		out, errOut, code := runClientCLI(t, nil, c.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "invalid value") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and %q", c.args, code, out, errOut, c.want)
		}
	}
}

// A command name that does not exist is a usage error naming it, after
// "help" too; a command group alone, and help for a command, still show help.
func TestUnknownCommandIsNamed(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"nosuchcmd"}, `unknown command "nosuchcmd"`},
		{[]string{"topic", "nosuch"}, `unknown command "nosuch" (want one of: create, list, describe, offsets, describe-producers, delete-records, alter, alter-config, reassign, delete)`},
		{[]string{"cluster", "stats"}, `unknown command "stats"`},
		// urfave/cli's help command said "No help topic for 'nosuch'", exit status 3.
		{[]string{"help", "nosuch"}, `unknown command "nosuch" (want one of: version, `},
		{[]string{"h", "nosuch"}, `unknown command "nosuch"`},
		{[]string{"topic", "help", "nosuch"}, `unknown command "nosuch" (want one of: create, list, describe, offsets, describe-producers, delete-records, alter, alter-config, reassign, delete)`},
	} {
		out, errOut, code := runClientCLI(t, nil, c.args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and %q", c.args, code, out, errOut, c.want)
		}
	}
	for _, args := range [][]string{{}, {"topic"}, {"help"}, {"help", "topic"}, {"h", "produce"}, {"topic", "help"}, {"topic", "help", "create"}} {
		out, errOut, code := runClientCLI(t, nil, args...)
		if code != 0 || !strings.Contains(out, "USAGE") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want help", args, code, out, errOut)
		}
	}
}

// "help" and "h" are valid topic names: a command taking a topic uses them as
// one instead of showing help and exiting 0 with the input unread.
func TestTopicNamedHelp(t *testing.T) {
	fc := startFakeCluster(t)
	for _, name := range []string{"help", "h"} {
		fc.CreateTopic(name, 1)
		out, errOut, code := runClientCLI(t, strings.NewReader("a\n"), "produce", name, "--json", "--bootstrap", fc.Bootstrap())
		if code != 0 || out != "{\"partition\":0,\"offset\":0}\n" {
			t.Errorf("produce %s: exit %d, stdout %q, stderr %q", name, code, out, errOut)
		}
		out, errOut, code = runClientCLI(t, nil, "consume", name, "--exit-at-end", "--bootstrap", fc.Bootstrap())
		if code != 0 || out != "a\n" {
			t.Errorf("consume %s: exit %d, stdout %q, stderr %q", name, code, out, errOut)
		}
		out, errOut, code = runClientCLI(t, nil, "topic", "describe", name, "--bootstrap", fc.Bootstrap())
		if code != 0 || !strings.HasPrefix(out, "Topic: "+name+" ") {
			t.Errorf("topic describe %s: exit %d, stdout %q, stderr %q", name, code, out, errOut)
		}
	}
	out, _, code := runClientCLI(t, nil, "produce", "--help")
	if code != 0 || !strings.Contains(out, "USAGE") {
		t.Errorf("produce --help: exit %d, stdout %q", code, out)
	}
}

// A chaos run with a count of 0 is a usage error naming the flag, before
// any cluster starts: the run would have taken its default instead.
func TestChaosRefusesEmptyCounts(t *testing.T) {
	for _, f := range []string{"--per-kind", "--producers", "--consumers"} {
		out, errOut, code := runClientCLI(t, nil, "chaos", f, "0")
		if code != 2 || out != "" || !strings.Contains(errOut, "chaos "+f+" must be at least 1, got 0") {
			t.Errorf("chaos %s 0: exit %d, stdout %q, stderr %q; want 2 naming the flag", f, code, out, errOut)
		}
	}
}

// A chaos run with an fsync policy the nodes would refuse is a usage error
// before any cluster starts.
func TestChaosRefusesUnknownFsyncPolicy(t *testing.T) {
	out, errOut, code := runClientCLI(t, nil, "chaos", "--fsync", "sometimes")
	if code != 2 || out != "" || !strings.Contains(errOut, `unknown fsync policy "sometimes"`) {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2 naming the policy", code, out, errOut)
	}
}

// --help and -h show help wherever they are written: at the top (urfave/cli
// leaves its help flag out of an app that has its own help command, and
// "paymentlog --help" failed with "flag: help requested"), and after a
// positional (urfave/cli took the positional for a help topic: "topic create
// x --help" said "No help topic for 'x'", exit 3). Nothing runs.
func TestHelpFlagAnywhere(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--help"}, "paymentlog [global options] command"},
		{[]string{"-h"}, "paymentlog [global options] command"},
		{[]string{"topic", "create", "payments", "--partitions", "3", "--help"}, "paymentlog topic create - "},
		{[]string{"produce", "payments", "-h"}, "paymentlog produce - "},
		{[]string{"consume", "payments", "--help=true"}, "paymentlog consume - "},
		{[]string{"cluster", "status", "--json", "--help"}, "paymentlog cluster status - "},
		{[]string{"help", "topic", "create"}, "paymentlog topic create - "},
		{[]string{"h", "cluster", "quorum"}, "paymentlog cluster quorum - "},
		{[]string{"help", "produce", "payments"}, "paymentlog produce - "},
	} {
		out, errOut, code := runClientCLI(t, strings.NewReader("a\n"), c.args...)
		if code != 0 || errOut != "" || !strings.Contains(out, c.want) {
			t.Errorf("%v: exit %d, stdout %.80q, stderr %q; want help with %q", c.args, code, out, errOut, c.want)
		}
	}
	// "help GROUP X" and "GROUP X --help", where X is no command of the
	// group, are usage errors.
	for _, args := range [][]string{{"help", "topic", "bogus"}, {"topic", "bogus", "--help"}, {"bogus", "-h"}} {
		_, errOut, code := runClientCLI(t, nil, args...)
		if code != 2 || !strings.Contains(errOut, `unknown command "bogus"`) {
			t.Errorf("%v: exit %d, stderr %q; want the usage error naming bogus", args, code, errOut)
		}
	}
	// After "--" it is a positional like any other.
	_, errOut, code := runClientCLI(t, nil, "topic", "create", "x", "--", "--help")
	if code != 2 || !strings.Contains(errOut, "x --help") {
		t.Errorf("topic create x -- --help: exit %d, stderr %q; want the usage error naming both arguments", code, errOut)
	}
}

// "paymentlog --version", "-v" and "paymentlog version" print the same line.
func TestVersionFlagMatchesCommand(t *testing.T) {
	want, _, code := runClientCLI(t, nil, "version")
	if code != 0 || want != "paymentlog "+Version+"\n" {
		t.Fatalf("version: exit %d, stdout %q", code, want)
	}
	for _, flag := range []string{"--version", "-v"} {
		if out, _, code := runClientCLI(t, nil, flag); code != 0 || out != want {
			t.Errorf("%s: exit %d, stdout %q; want %q", flag, code, out, want)
		}
	}
}

// --group-instance-id needs a member (--group, no --partition) and a name
// the cluster accepts; the chaos run's --nodes is bounded. Both are usage
// errors before anything connects or starts.
func TestGroupInstanceAndChaosNodesUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"consume", "payments", "--group-instance-id", "pay-1"}, "--group-instance-id needs --group without --partition"},
		{[]string{"consume", "payments", "--group", "g", "--partition", "0", "--group-instance-id", "pay-1"}, "--group-instance-id needs --group without --partition"},
		{[]string{"consume", "payments", "--group", "g", "--group-instance-id", "pay 1"}, "--group-instance-id: "},
		{[]string{"chaos", "--nodes", "2"}, "chaos --nodes must be from 3 to 7, got 2"},
		{[]string{"chaos", "--nodes", "8"}, "chaos --nodes must be from 3 to 7, got 8"},
	} {
		out, errOut, code := runClientCLI(t, nil, c.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and %q", c.args, code, out, errOut, c.want)
		}
	}
}
