package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/mcpsign/mcpsign/internal/app/proxycmd"
)

func newVersionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the version of mcpsign and of the libraries it verifies with",
		Args:    cobra.NoArgs,
		Example: "  mcpsign version",
		RunE: func(cmd *cobra.Command, _ []string) error {
			deps := map[string]string{}
			if bi, ok := debug.ReadBuildInfo(); ok {
				for _, d := range bi.Deps {
					deps[d.Path] = d.Version
				}
			}
			fmt.Fprintf(a.stdout, "mcpsign %s\n", proxycmd.BuildVersion())
			fmt.Fprintf(a.stdout, "  go          %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
			for _, d := range []struct{ name, path string }{
				{"sigstore-go", "github.com/sigstore/sigstore-go"},
				{"mcp go-sdk", "github.com/modelcontextprotocol/go-sdk"},
				{"jcs", "github.com/gowebpki/jcs"},
			} {
				if v, ok := deps[d.path]; ok {
					fmt.Fprintf(a.stdout, "  %-11s %s\n", d.name, v)
				}
			}
			return nil
		},
	}
}
