package localcluster

import "syscall"

// sysProcAttr puts the child in its own process group (so signals reach any
// wrapper's children too) and kills it when the forking thread dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
