//go:build !linux

package segment

import "os"

// pwriteRaw is os.File.WriteAt where raw system calls are not wired up.
func pwriteRaw(f *os.File, p []byte, off int64) (int, error) { return f.WriteAt(p, off) }
