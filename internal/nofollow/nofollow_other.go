//go:build !unix

package nofollow

import (
	"io/fs"
	"os"
)

// openNoFollow has no O_NOFOLLOW here: Open's Lstat before it is the check.
func openNoFollow(path string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(path, flag, perm)
}

// blocking has nothing to do here: openNoFollow opens in blocking mode.
func blocking(*os.File) error { return nil }
