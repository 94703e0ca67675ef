// Command paymentlog is a replicated, partitioned commit log for payment events.
package main

import (
	"os"

	"paymentlog/cli"
)

func main() { os.Exit(cli.Run(os.Args)) }
