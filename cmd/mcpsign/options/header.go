package options

import "github.com/spf13/pflag"

// AddHeaderFlag adds --header, the HTTP headers sent to a Streamable HTTP
// server ('Name: value', ${VAR} read from the environment:
// mcpwire.ParseHeaders), to fs: the one definition of the flag, for every
// command that speaks to a remote server (the listing commands and the
// proxy).
func AddHeaderFlag(fs *pflag.FlagSet, headers *[]string) {
	StringArrayVar(fs, headers, "header", "HTTP header 'Name: value' sent to a Streamable HTTP server, e.g. for auth; ${VAR} in the value is read from the environment (repeatable; values are never printed)")
}
