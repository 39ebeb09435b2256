//go:build !unix

package proxycmd

func runStdioHelper() bool { return false }
