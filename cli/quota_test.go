package cli

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"paymentlog/client/clienttest"
	"paymentlog/quic"
	"paymentlog/wire"
)

// quota's usage errors: exit status 2, one line on stderr naming what is
// wrong, nothing on stdout, and no request sent (the bootstrap address
// answers nothing).
func TestQuotaUsageErrors(t *testing.T) {
	bs := "--bootstrap=127.0.0.1:1"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"set", "--producer-byte-rate", "1MiB"}, "quota set: missing --principal NAME or --default"},
		{[]string{"set", "--principal", "billing"}, "quota set: missing --producer-byte-rate or --consumer-byte-rate"},
		{[]string{"set", "--principal", "billing", "--default", "--producer-byte-rate", "1MiB"}, "--principal and --default: give one"},
		{[]string{"set", "--principal", "*", "--producer-byte-rate", "1MiB"}, "--principal *: a quota is each principal's own; for every principal without one, give --default"},
		{[]string{"set", "--principal", "User:*", "--producer-byte-rate", "1MiB"}, "give --default"},
		{[]string{"set", "--principal", "Group:ops", "--producer-byte-rate", "1MiB"}, "--principal: principal"},
		{[]string{"set", "--principal", "", "--producer-byte-rate", "1MiB"}, "--principal"},
		{[]string{"set", "--principal", "billing", "--producer-byte-rate", "fast"}, `--producer-byte-rate: "fast": want bytes per second, an integer or one with KiB, MiB or GiB`},
		{[]string{"set", "--principal", "billing", "--consumer-byte-rate", "1MB"}, `--consumer-byte-rate: "1MB": want bytes per second`},
		{[]string{"set", "--principal", "billing", "--consumer-byte-rate", "1.5MiB"}, `"1.5MiB": want bytes per second`},
		{[]string{"set", "--principal", "billing", "--consumer-byte-rate", "-2048"}, `"-2048": want bytes per second`},
		{[]string{"set", "--principal", "billing", "--producer-byte-rate", "1000"}, "--producer-byte-rate: 1000: at least 1024 bytes per second"},
		{[]string{"set", "--default", "--producer-byte-rate", "0"}, "at least 1024 bytes per second"},
		{[]string{"set", "--default", "--producer-byte-rate", "99999999999GiB"}, `"99999999999GiB": too large`},
		{[]string{"set", "extra", "--default", "--producer-byte-rate", "1MiB"}, "quota set takes no arguments (got extra)"},
		{[]string{"delete"}, "quota delete: missing --principal NAME or --default"},
		{[]string{"delete", "--default", "--principal", "billing"}, "--principal and --default: give one"},
		{[]string{"delete", "--principal", "*"}, "give --default"},
		{[]string{"delete", "--principal", "billing", "--producer-byte-rate", "1MiB"}, "quota delete takes no arguments (got 1MiB): --producer-byte-rate and --consumer-byte-rate take no value"},
		{[]string{"list", "--principal", "billing"}, "flag provided but not defined: --principal"},
		{[]string{"list", "x"}, "quota list takes no arguments"},
		{[]string{"bogus"}, `unknown command "bogus" (want one of: set, delete, list)`},
	} {
		args := append([]string{"quota"}, c.args...)
		if c.args[0] != "bogus" {
			args = append(args, bs)
		}
		out, errOut, code := runClientCLI(t, nil, args...)
		if out != "" {
			t.Errorf("quota %v: stdout %q", c.args, out)
		}
		oneErrorLine(t, "quota "+strings.Join(c.args, " "), code, errOut, 2, c.want)
	}
}

// Rates are integers, optionally with KiB, MiB or GiB (any case, a space
// and /s allowed), and read back readably.
func TestParseByteRate(t *testing.T) {
	for in, want := range map[string]int64{"1024": 1024, "1048576": 1 << 20, "512KiB": 512 << 10, "1MiB": 1 << 20, "1 mib": 1 << 20,
		"2GiB/s": 2 << 30, "4096B": 4096, " 3 KiB/s ": 3 << 10} {
		if got, err := parseByteRate(in); err != nil || got != want {
			t.Errorf("%q: %d %v, want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "1023", "1KiB/", "KiB", "1 KB", "1k", "0x400", "1e6", "+2048", "1.5MiB", "1MiBs"} {
		if got, err := parseByteRate(in); err == nil {
			t.Errorf("%q: %d, want an error", in, got)
		}
	}
	for n, want := range map[int64]string{1024: "1024 (1 KiB/s)", 1 << 20: "1048576 (1 MiB/s)", 3 << 29: "1610612736 (1.5 GiB/s)",
		1536: "1536 (1.5 KiB/s)", 5 << 30: "5368709120 (5 GiB/s)", 1000: "1000 (1000 B/s)"} {
		if got := formatByteRate(n); got != want {
			t.Errorf("%d: %q, want %q", n, got, want)
		}
	}
}

// quota set, list and delete against a fake cluster: set a principal's and
// the default's rates (a second set changes one and keeps the other), list
// the table (the default first, "-" for a rate not set) and --json, delete
// one rate and then both (no flag), and list nothing.
func TestQuotaCommands(t *testing.T) {
	fc := startFakeCluster(t)
	bs := "--bootstrap=" + fc.Bootstrap()
	run := func(args ...string) string {
		t.Helper()
		out, errOut, code := runClientCLI(t, nil, append(append([]string{"quota"}, args...), bs)...)
		if code != 0 || errOut != "" {
			t.Fatalf("quota %v: exit %d, stderr %q", args, code, errOut)
		}
		return out
	}
	if out := run("list"); out != "no quotas\n" {
		t.Fatalf("list of none: %q", out)
	}
	if out := run("set", "--principal", "billing", "--producer-byte-rate", "1MiB", "--consumer-byte-rate", "2097152"); out !=
		"set quota of User:billing: producer_byte_rate=1048576 (1 MiB/s), consumer_byte_rate=2097152 (2 MiB/s)\n" {
		t.Fatalf("set billing: %q", out)
	}
	if out := run("set", "--principal", "User:billing", "--consumer-byte-rate", "512KiB"); out !=
		"set quota of User:billing: consumer_byte_rate=524288 (512 KiB/s)\n" {
		t.Fatalf("set billing again: %q", out)
	}
	if out := run("set", "--default", "--producer-byte-rate", "1536"); out != "set quota of the default: producer_byte_rate=1536 (1.5 KiB/s)\n" {
		t.Fatalf("set default: %q", out)
	}
	t.Setenv("PAYMENTLOG_QUOTA_CONSUMER_BYTE_RATE", "10MiB")
	run("set", "--principal", "audit")
	t.Setenv("PAYMENTLOG_QUOTA_CONSUMER_BYTE_RATE", "")
	if n := fc.Calls(wire.TypeAlterClientQuotas); n != 4 {
		t.Fatalf("%d AlterClientQuotas requests for 4 sets", n)
	}

	out := run("list")
	want := "ENTITY        PRODUCER BYTE RATE  CONSUMER BYTE RATE\n" +
		"(default)     1536 (1.5 KiB/s)    -\n" +
		"User:audit    -                   10485760 (10 MiB/s)\n" +
		"User:billing  1048576 (1 MiB/s)   524288 (512 KiB/s)\n" +
		"quotas are per node: a principal may produce to, and fetch from, each node at its rates\n"
	if out != want {
		t.Fatalf("list:\n%s\nwant:\n%s", out, want)
	}
	var js struct {
		Quotas []struct {
			Principal        string `json:"principal"`
			Default          bool   `json:"default"`
			ProducerByteRate *int64 `json:"producer_byte_rate"`
			ConsumerByteRate *int64 `json:"consumer_byte_rate"`
		} `json:"quotas"`
	}
	raw := run("list", "--json")
	if err := json.Unmarshal([]byte(raw), &js); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	if len(js.Quotas) != 3 || !js.Quotas[0].Default || js.Quotas[0].Principal != "" || *js.Quotas[0].ProducerByteRate != 1536 ||
		js.Quotas[0].ConsumerByteRate != nil || js.Quotas[1].Default || js.Quotas[1].Principal != "User:audit" ||
		js.Quotas[2].Principal != "User:billing" || *js.Quotas[2].ConsumerByteRate != 512<<10 {
		t.Fatalf("list --json: %s", raw)
	}
	if !strings.Contains(raw, `"consumer_byte_rate":null`) {
		t.Fatalf("list --json: a rate not set is not null: %s", raw)
	}

	if out := run("delete", "--principal", "billing", "--producer-byte-rate"); out != "deleted quota of User:billing: producer_byte_rate\n" {
		t.Fatalf("delete billing's producer rate: %q", out)
	}
	if out := run("delete", "--principal", "billing"); out != "deleted quota of User:billing: producer_byte_rate, consumer_byte_rate\n" {
		t.Fatalf("delete billing's: %q", out)
	}
	run("delete", "--principal", "billing") // nothing left: no error
	run("delete", "--default", "--consumer-byte-rate", "--producer-byte-rate")
	got := fc.ClientQuotas()
	if len(got) != 1 || got[0].Principal != "User:audit" || !maps.Equal(got[0].Values, map[string]int64{wire.QuotaConsumerByteRate: 10 << 20}) {
		t.Fatalf("left: %+v", got)
	}
	run("delete", "--principal", "audit", "--consumer-byte-rate")
	if out := run("list"); out != "no quotas\n" {
		t.Fatalf("list after deleting every quota: %q", out)
	}
	if out := run("list", "--json"); out != "{\"quotas\":[]}\n" {
		t.Fatalf("list --json of none: %q", out)
	}
}

// A refusal by the cluster (a principal that may not change or list
// quotas) exits 1 with one line naming the code and the node's message.
func TestQuotaRefused(t *testing.T) {
	fc := startFakeCluster(t)
	fc.SetIntercept(func(_ string, ty quic.FrameType, _ any) clienttest.Action {
		if ty == wire.TypeAlterClientQuotas || ty == wire.TypeDescribeClientQuotas {
			return clienttest.Action{Kind: clienttest.Refuse, Code: wire.ClusterAuthorizationFailed}
		}
		return clienttest.Action{}
	})
	bs := "--bootstrap=" + fc.Bootstrap()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"set", "--principal", "billing", "--producer-byte-rate", "1MiB"}, "set quota: ClusterAuthorizationFailed: refused by clienttest"},
		{[]string{"delete", "--default"}, "delete quota: ClusterAuthorizationFailed: refused by clienttest"},
		{[]string{"list"}, "list quotas: ClusterAuthorizationFailed: refused by clienttest"},
	} {
		out, errOut, code := runClientCLI(t, nil, append(append([]string{"quota"}, c.args...), bs, "--timeout", "20s")...)
		if out != "" {
			t.Errorf("quota %v: stdout %q", c.args, out)
		}
		oneErrorLine(t, "quota "+strings.Join(c.args, " "), code, errOut, 1, c.want)
	}
}
