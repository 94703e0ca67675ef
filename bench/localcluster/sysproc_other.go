//go:build !linux

package localcluster

import "syscall"

// sysProcAttr puts the child in its own process group. Outside Linux there is
// no Pdeathsig: children outlive a parent that dies without calling Close.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
