//go:build unix

package nofollow

import (
	"io/fs"
	"os"
	"syscall"
)

func openNoFollow(path string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(path, flag|syscall.O_NOFOLLOW, perm)
}
