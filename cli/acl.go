package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	ucli "github.com/urfave/cli/v2"

	"paymentlog/client"
	"paymentlog/node/acl"
	"paymentlog/wire"
)

func init() { commands = append(commands, aclCommand) }

// aclCommand is `paymentlog acl`: the cluster's access control lists
// (Kafka's kafka-acls), enforced by nodes started with --authorizer acl.
func aclCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "acl",
		Usage: "add, remove and list ACLs: what each client principal may do to topics, groups and the cluster",
		Subcommands: []*ucli.Command{
			{
				Name:  "add",
				Usage: "allow (or deny) a principal operations on a topic, a group or the cluster",
				UsageText: "paymentlog acl add --principal NAME [--allow|--deny] --operation OP[,OP...] (--topic T | --group G | --cluster) [--prefixed] [--host IP|CIDR]\n\n" +
					"NAME is a client certificate's common name (paymentlog cert issue --name NAME), as NAME or\n" +
					"User:NAME; * (or User:*) is every client. --topic '*' (--group '*') is every topic (group);\n" +
					"--prefixed makes T (G) a prefix: every topic (group) whose name starts with it.\n" +
					"operations: topic: all, read, write, create, delete, alter, describe; group: all, read,\n" +
					"delete, describe; cluster: all, create, alter, describe. read, write, delete and alter\n" +
					"imply describe. A deny wins over any allow; without an allow nothing is allowed. --host\n" +
					"limits the ACL to clients connecting from that address or network (a deny with a host also\n" +
					"refuses a client whose address is unknown); it needs every broker at metadata version 8.\n" +
					"Enforced only by nodes started with --authorizer acl; node certificates and the nodes'\n" +
					"--super-users are allowed everything.",
				Flags: aclFlags(aclAdd),
				Action: func(c *ucli.Context) error {
					opts, err := parseACLOptions(c, aclAdd)
					if err != nil {
						return err
					}
					return runACLAdd(c.Context, opts, c.App.Writer, c.App.ErrWriter)
				},
			},
			{
				Name:  "remove",
				Usage: "remove the ACLs the selectors match (a selector not given matches anything)",
				UsageText: "paymentlog acl remove [--principal NAME] [--allow|--deny] [--operation OP[,OP...]]\n" +
					"                      [--topic T | --group G | --cluster] [--prefixed|--literal] [--host IP|CIDR|*]\n" +
					"paymentlog acl remove --all\n\n" +
					"Removes every ACL that matches all the selectors given (names as written: --topic payments\n" +
					"matches the ACLs added with --topic payments, literal or --prefixed, not those of '*' or of\n" +
					"a prefix of it). At least one selector, or --all to remove every ACL.",
				Flags: aclFlags(aclRemove),
				Action: func(c *ucli.Context) error {
					opts, err := parseACLOptions(c, aclRemove)
					if err != nil {
						return err
					}
					return runACLRemove(c.Context, opts, c.App.Writer, c.App.ErrWriter)
				},
			},
			{
				Name:  "list",
				Usage: "list the ACLs (all, or those the selectors match) and whether the nodes enforce them",
				UsageText: "paymentlog acl list [--principal NAME] [--allow|--deny] [--operation OP[,OP...]]\n" +
					"                    [--topic T | --group G | --cluster] [--prefixed|--literal] [--host IP|CIDR|*] [--json]\n\n" +
					"Selectors match as in acl remove.",
				Flags: aclFlags(aclList),
				Action: func(c *ucli.Context) error {
					opts, err := parseACLOptions(c, aclList)
					if err != nil {
						return err
					}
					return runACLList(c.Context, opts, c.App.Writer, c.App.ErrWriter)
				},
			},
		},
	}
}

// aclVerb is an acl subcommand.
type aclVerb string

const (
	aclAdd    aclVerb = "add"
	aclRemove aclVerb = "remove"
	aclList   aclVerb = "list"
)

// aclFlags are the flags of acl verb: add's name the bindings to create,
// remove's and list's select bindings.
func aclFlags(verb aclVerb) []ucli.Flag {
	ev := func(name string) []string { return envVar("ACL_" + name) }
	add := verb == aclAdd
	usage := func(forAdd, forSelect string) string {
		if add {
			return forAdd
		}
		return forSelect
	}
	own := []ucli.Flag{
		&ucli.StringFlag{Name: "principal", EnvVars: ev("PRINCIPAL"),
			Usage: usage("the principal: a client certificate's common name, as NAME or User:NAME; * for every client",
				"only the ACLs of this principal (NAME or User:NAME; * selects those written for every client)")},
		&ucli.StringSliceFlag{Name: "operation", EnvVars: ev("OPERATION"),
			Usage: usage("operations, comma-separated or the flag repeated: all, read, write, create, delete, alter, describe",
				"only the ACLs of these operations (comma-separated or the flag repeated)")},
		&ucli.StringFlag{Name: "topic", EnvVars: ev("TOPIC"),
			Usage: usage("a topic (with --prefixed: a prefix of topic names); '*' is every topic", "only the ACLs of this topic name (or prefix) as written")},
		&ucli.StringFlag{Name: "group", EnvVars: ev("GROUP"),
			Usage: usage("a consumer group (with --prefixed: a prefix of group names); '*' is every group", "only the ACLs of this group name (or prefix) as written")},
		&ucli.BoolFlag{Name: "cluster", EnvVars: ev("CLUSTER"),
			Usage: usage("the cluster (creating topics, changing cluster configs and ACLs, listing ACLs)", "only the ACLs of the cluster")},
		&ucli.BoolFlag{Name: "prefixed", EnvVars: ev("PREFIXED"),
			Usage: usage("--topic/--group is a prefix of the names", "only prefixed ACLs")},
		&ucli.StringFlag{Name: "host", EnvVars: ev("HOST"),
			Usage: usage("only for clients connecting from this IP address or CIDR network, such as 10.1.0.0/16 (default *: from anywhere)",
				"only the ACLs of this host as written (* selects those for every host)")},
		&ucli.BoolFlag{Name: "allow", EnvVars: ev("ALLOW"), Usage: usage("allow (the default)", "only allow ACLs")},
		&ucli.BoolFlag{Name: "deny", EnvVars: ev("DENY"), Usage: usage("deny: wins over any allow", "only deny ACLs")},
	}
	switch verb {
	case aclRemove:
		own = append(own,
			&ucli.BoolFlag{Name: "literal", Usage: "only literal (not prefixed) ACLs", EnvVars: ev("LITERAL")},
			&ucli.BoolFlag{Name: "all", Usage: "remove every ACL (instead of selectors)", EnvVars: ev("REMOVE_ALL")})
	case aclList:
		own = append(own,
			&ucli.BoolFlag{Name: "literal", Usage: "only literal (not prefixed) ACLs", EnvVars: ev("LITERAL")},
			&ucli.BoolFlag{Name: "json", Usage: "print JSON", EnvVars: ev("JSON")})
	}
	own = append(own, timeoutFlag("ACL_TIMEOUT", defaultAdminTimeout))
	return withFlags(clientFlags(), own)
}

// aclOptions are the parsed flags of an acl subcommand: for add, the
// bindings to create; for remove and list, the filters (one per
// operation given, else one).
type aclOptions struct {
	client   clientOptions
	bindings []wire.ACLBinding
	filters  []wire.ACLFilter
	json     bool
	timeout  time.Duration
}

// parseACLOptions reads and checks an acl subcommand's flags; every error
// is a usage error.
func parseACLOptions(c *ucli.Context, verb aclVerb) (aclOptions, error) {
	if c.NArg() > 0 {
		return aclOptions{}, usageError("acl %s takes no arguments (got %s): the principal, operations and resource are flags",
			verb, strings.Join(c.Args().Slice(), " "))
	}
	co, err := parseClientOptions(c)
	if err != nil {
		return aclOptions{}, usageError("%v", err)
	}
	opts := aclOptions{client: co, json: c.Bool("json"), timeout: c.Duration("timeout")}
	sel, err := parseACLSelectors(c, verb)
	if err != nil {
		return aclOptions{}, usageError("acl %s: %v", verb, err)
	}
	if verb == aclAdd {
		opts.bindings, err = sel.bindings()
	} else {
		opts.filters, err = sel.filters(verb)
	}
	if err != nil {
		return aclOptions{}, usageError("acl %s: %v", verb, err)
	}
	return opts, nil
}

// aclSelectors are the flags naming bindings ("" or nil: not given).
type aclSelectors struct {
	principal    string
	permission   string
	operations   []string
	resourceType string
	name         string
	patternType  string
	host         string // add: the binding's (canonical, "" for any); select: a filter's (wire.AnyHostFilter for any)
	all          bool   // remove --all
	given        bool   // any selector given
}

func parseACLSelectors(c *ucli.Context, verb aclVerb) (aclSelectors, error) {
	var s aclSelectors
	if c.IsSet("principal") {
		p, err := normalizePrincipal(c.String("principal"))
		if err != nil {
			return s, err
		}
		s.principal = p
	}
	switch allow, deny := c.Bool("allow"), c.Bool("deny"); {
	case allow && deny:
		return s, fmt.Errorf("--allow and --deny: give one")
	case deny:
		s.permission = wire.PermissionDeny
	case allow || verb == aclAdd:
		s.permission = wire.PermissionAllow
	}
	for _, v := range c.StringSlice("operation") {
		for _, op := range strings.Split(v, ",") {
			op = strings.ToLower(strings.TrimSpace(op))
			if op == "" {
				continue
			}
			if !slices.Contains(s.operations, op) {
				s.operations = append(s.operations, op)
			}
		}
	}
	if c.IsSet("operation") && len(s.operations) == 0 {
		return s, fmt.Errorf("--operation: no operation given")
	}
	var resources []string
	if c.IsSet("topic") {
		resources = append(resources, "--topic")
		s.resourceType, s.name = wire.ResourceTopic, c.String("topic")
	}
	if c.IsSet("group") {
		resources = append(resources, "--group")
		s.resourceType, s.name = wire.ResourceGroup, c.String("group")
	}
	if c.Bool("cluster") {
		resources = append(resources, "--cluster")
		s.resourceType, s.name = wire.ResourceCluster, wire.ClusterResourceName
	}
	if len(resources) > 1 {
		return s, fmt.Errorf("%s: give one resource", strings.Join(resources, " and "))
	}
	if len(resources) == 1 && s.name == "" {
		return s, fmt.Errorf("%s: empty name", resources[0])
	}
	switch prefixed, literal := c.Bool("prefixed"), verb != aclAdd && c.Bool("literal"); {
	case prefixed && literal:
		return s, fmt.Errorf("--prefixed and --literal: give one")
	case prefixed && s.resourceType == wire.ResourceCluster:
		return s, fmt.Errorf("--prefixed: the cluster is one resource, named by --cluster alone")
	case prefixed:
		s.patternType = wire.PatternPrefixed
	case literal || verb == aclAdd:
		s.patternType = wire.PatternLiteral
	}
	if c.IsSet("host") {
		h := strings.TrimSpace(c.String("host"))
		switch {
		case h == "*" && verb == aclAdd:
		case h == "*":
			s.host = wire.AnyHostFilter
		default:
			if why := wire.CheckACLHost(h); why != "" || h == "" {
				return s, fmt.Errorf("--host: %s", cmp.Or(why, "empty (* is every host)"))
			}
			s.host = h
		}
	}
	s.given = s.principal != "" || s.permission != "" || len(s.operations) > 0 || s.resourceType != "" || s.patternType != "" || s.host != ""
	if verb == aclRemove && c.Bool("all") {
		if s.given {
			return s, fmt.Errorf("--all removes every ACL: give it without selectors")
		}
		s.all = true
	}
	return s, nil
}

// normalizePrincipal turns NAME, User:NAME, * and User:* into a principal.
func normalizePrincipal(p string) (string, error) {
	switch {
	case p == "*":
		p = wire.WildcardPrincipal
	case !strings.HasPrefix(p, wire.PrincipalPrefix) && !strings.Contains(p, ":") && p != "":
		p = wire.PrincipalPrefix + p
	}
	if why := wire.CheckPrincipal(p); why != "" {
		return "", fmt.Errorf("--principal: %s", why)
	}
	return p, nil
}

// bindings are the bindings acl add creates: one per operation.
func (s aclSelectors) bindings() ([]wire.ACLBinding, error) {
	var missing []string
	if s.principal == "" {
		missing = append(missing, "--principal")
	}
	if len(s.operations) == 0 {
		missing = append(missing, "--operation")
	}
	if s.resourceType == "" {
		missing = append(missing, "a resource (--topic, --group or --cluster)")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("missing %s", strings.Join(missing, ", "))
	}
	out := make([]wire.ACLBinding, 0, len(s.operations))
	for _, op := range s.operations {
		b := wire.ACLBinding{Principal: s.principal, ResourceType: s.resourceType, PatternType: s.patternType, Name: s.name,
			Operation: op, Permission: s.permission, Host: s.host}
		if why := wire.CheckACLBinding(b); why != "" {
			return nil, fmt.Errorf("%s", why)
		}
		out = append(out, b)
	}
	return out, nil
}

// filters are the filters acl remove and list send: one per operation
// (else one). Each field given is checked as a binding's would be, so that
// a misspelt operation or name is an error rather than a match of nothing.
func (s aclSelectors) filters(verb aclVerb) ([]wire.ACLFilter, error) {
	if verb == aclRemove && !s.given && !s.all {
		return nil, fmt.Errorf("give at least one selector (--principal, --operation, --topic, --group, --cluster, --allow, --deny, " +
			"--prefixed, --literal, --host), or --all to remove every ACL")
	}
	ops := s.operations
	if len(ops) == 0 {
		ops = []string{""}
	}
	out := make([]wire.ACLFilter, 0, len(ops))
	for _, op := range ops {
		f := wire.ACLFilter{Principal: s.principal, ResourceType: s.resourceType, PatternType: s.patternType, Name: s.name,
			Operation: op, Permission: s.permission, Host: s.host}
		if why := checkACLFilterFields(f); why != "" {
			return nil, fmt.Errorf("%s", why)
		}
		out = append(out, f)
	}
	return out, nil
}

// checkACLFilterFields says why no valid binding can match f ("" when
// one can): an operation no resource type (or not f's) has, a resource
// name its type does not allow.
func checkACLFilterFields(f wire.ACLFilter) string {
	if f.Operation != "" && f.ResourceType == "" {
		for _, rt := range []string{wire.ResourceTopic, wire.ResourceGroup, wire.ResourceCluster} {
			if slices.Contains(wire.OperationsOf(rt), f.Operation) {
				return ""
			}
		}
		return fmt.Sprintf("operation %q: want one of %s", f.Operation, strings.Join(wire.OperationsOf(wire.ResourceTopic), ", "))
	}
	if f.ResourceType == "" {
		return ""
	}
	// A binding with f's fields and any valid others.
	probe := wire.ACLBinding{Principal: cmp.Or(f.Principal, wire.WildcardPrincipal), ResourceType: f.ResourceType,
		PatternType: cmp.Or(f.PatternType, wire.PatternLiteral), Name: f.Name, Operation: cmp.Or(f.Operation, wire.OpAll),
		Permission: cmp.Or(f.Permission, wire.PermissionAllow)}
	return wire.CheckACLBinding(probe)
}

func runACLAdd(ctx context.Context, opts aclOptions, stdout, stderr io.Writer) error {
	return withAdmin(ctx, opts.client, opts.timeout, stderr, func(ctx context.Context, a *client.Admin) error {
		created, err := a.CreateACLs(ctx, opts.bindings)
		if err != nil {
			return fmt.Errorf("add ACLs: %w", err)
		}
		fmt.Fprintf(stdout, "created %s (%d already existed)\n", plural(created, "ACL"), len(opts.bindings)-created)
		return printACLTable(stdout, opts.bindings)
	})
}

func runACLRemove(ctx context.Context, opts aclOptions, stdout, stderr io.Writer) error {
	return withAdmin(ctx, opts.client, opts.timeout, stderr, func(ctx context.Context, a *client.Admin) error {
		removed, err := a.DeleteACLs(ctx, opts.filters...)
		if err != nil {
			return fmt.Errorf("remove ACLs: %w", err)
		}
		if len(removed) == 0 {
			fmt.Fprintln(stdout, "removed no ACLs: none matched")
			return nil
		}
		slices.SortFunc(removed, acl.Compare)
		fmt.Fprintf(stdout, "removed %s\n", plural(len(removed), "ACL"))
		return printACLTable(stdout, removed)
	})
}

// aclJSON is one binding in `acl list --json`.
type aclJSON struct {
	Permission   string `json:"permission"`
	Principal    string `json:"principal"`
	Operation    string `json:"operation"`
	ResourceType string `json:"resource_type"`
	PatternType  string `json:"pattern_type"`
	Name         string `json:"name"`
	Host         string `json:"host"` // an IP address or CIDR network; * for every host
}

// aclListJSON is `acl list --json`.
type aclListJSON struct {
	ACLs []aclJSON `json:"acls"`
	// Enforced: the answering node (Node, -1 if unknown) enforces ACLs.
	Enforced bool  `json:"enforced"`
	Node     int32 `json:"node"`
	// The alive nodes that enforce ACLs, that do not, and that did not
	// answer (client.Admin.DescribeACLEnforcement).
	EnforcingNodes    []int32 `json:"enforcing_nodes"`
	NotEnforcingNodes []int32 `json:"not_enforcing_nodes"`
	UnansweredNodes   []int32 `json:"unanswered_nodes"`
}

func runACLList(ctx context.Context, opts aclOptions, stdout, stderr io.Writer) error {
	return withAdmin(ctx, opts.client, opts.timeout, stderr, func(ctx context.Context, a *client.Admin) error {
		// One filter per operation: each node lists what one selects.
		var l client.ACLList
		for i, f := range opts.filters {
			part, err := a.DescribeACLs(ctx, f)
			if err != nil {
				return fmt.Errorf("list ACLs: %w", err)
			}
			if i == 0 {
				l = part
			} else {
				l.ACLs = append(l.ACLs, part.ACLs...)
			}
		}
		slices.SortFunc(l.ACLs, acl.Compare)
		l.ACLs = slices.Compact(l.ACLs)
		enf, err := a.DescribeACLEnforcement(ctx)
		if err != nil {
			return fmt.Errorf("list ACLs: %w", err)
		}
		if opts.json {
			out := aclListJSON{ACLs: make([]aclJSON, 0, len(l.ACLs)), Enforced: l.Enforced, Node: l.Node,
				EnforcingNodes: nonNil(enf.Enforcing), NotEnforcingNodes: nonNil(enf.NotEnforcing), UnansweredNodes: nonNil(enf.Unanswered)}
			for _, b := range l.ACLs {
				out.ACLs = append(out.ACLs, aclJSON{Permission: b.Permission, Principal: b.Principal, Operation: b.Operation,
					ResourceType: b.ResourceType, PatternType: b.PatternType, Name: b.Name, Host: hostOrAny(b.Host)})
			}
			return printJSON(stdout, out)
		}
		if len(l.ACLs) == 0 {
			fmt.Fprintln(stdout, "no ACLs")
		} else if err := printACLTable(stdout, l.ACLs); err != nil {
			return err
		}
		fmt.Fprintln(stdout, enforcementLine(enf))
		return nil
	})
}

// enforcementLine says which alive nodes enforce the ACLs: a node started
// without --authorizer acl lets every client certificate do everything, so
// the ACLs hold only where every node enforces them.
func enforcementLine(e client.ACLEnforcement) string {
	var s string
	switch {
	case len(e.NotEnforcing) == 0 && len(e.Enforcing) > 0:
		s = fmt.Sprintf("authorization: enforced on every node that answered (%s; --authorizer acl)", joinIDs(e.Enforcing))
	case len(e.Enforcing) == 0:
		s = "authorization: NOT enforced: nodes run without --authorizer acl, so these ACLs have no effect"
	default:
		s = fmt.Sprintf("authorization: enforced only on %s; NOT on %s, where every client certificate may do everything: start every node with --authorizer acl",
			nodesNamed(e.Enforcing), nodesNamed(e.NotEnforcing))
	}
	if len(e.Unanswered) > 0 {
		s += fmt.Sprintf(" (%s did not answer)", nodesNamed(e.Unanswered))
	}
	return s
}

// nodesNamed is "node 3" or "nodes 1,2".
func nodesNamed(ids []int32) string {
	if len(ids) == 1 {
		return fmt.Sprintf("node %d", ids[0])
	}
	return "nodes " + joinIDs(ids)
}

// nonNil is ids, or an empty list for JSON.
func nonNil(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return ids
}

// printACLTable prints bindings, one a line.
func printACLTable(w io.Writer, bindings []wire.ACLBinding) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PERMISSION\tPRINCIPAL\tOPERATION\tRESOURCE\tPATTERN\tNAME\tHOST")
	for _, b := range bindings {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", b.Permission, b.Principal, b.Operation, b.ResourceType, b.PatternType, b.Name, hostOrAny(b.Host))
	}
	return tw.Flush()
}

// hostOrAny is a binding's host as printed: * for every host.
func hostOrAny(h string) string { return cmp.Or(h, "*") }

// plural is "1 ACL", "2 ACLs".
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
