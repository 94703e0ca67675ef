package localcluster

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
)

// makeCerts runs `paymentlog cert init` and one `cert issue` per node (a node
// certificate for its id) plus one for the client (a client certificate:
// the cluster refuses node-to-node requests from it), in dir.
func (c *Cluster) makeCerts(ctx context.Context, dir string) error {
	if err := c.runTool(ctx, "cert", "init", "--dir", dir); err != nil {
		return err
	}
	for _, n := range c.nodes {
		host, _, err := net.SplitHostPort(n.addr)
		if err != nil {
			return fmt.Errorf("localcluster: node %d address %q: %w", n.id, n.addr, err)
		}
		if err := c.runTool(ctx, "cert", "issue", "--dir", dir, "--name", certName(n.id), "--node-id", strconv.Itoa(int(n.id)), "--host", host); err != nil {
			return err
		}
	}
	return c.runTool(ctx, "cert", "issue", "--dir", dir, "--name", ClientCertName, "--host", DefaultHost)
}

func certName(id int32) string { return fmt.Sprintf("node%d", id) }

// runTool runs the binary once (not as a node) and returns its stderr in the error.
func (c *Cluster) runTool(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, c.opts.Binary, args...)
	cmd.Env = c.env()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("localcluster: %s %s: %w: %s", c.opts.Binary, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}
