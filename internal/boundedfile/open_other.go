//go:build !unix

package boundedfile

import "os"

// openFlags: only Unix has named pipes that block at open.
const openFlags = os.O_RDONLY
