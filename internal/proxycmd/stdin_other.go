//go:build !unix

package proxycmd

import "os"

// PollableStdin returns os.Stdin: only Unix systems get a pollable stdin.
func PollableStdin() (stdin *os.File, restore func()) { return os.Stdin, func() {} }
