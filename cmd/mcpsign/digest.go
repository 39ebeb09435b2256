package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/mcpsign/mcpsign/attest"
	"github.com/mcpsign/mcpsign/cmd/mcpsign/options"
	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/source"
)

func newDigestCmd(a *app) *cobra.Command {
	var (
		src       options.SourceOptions
		out       options.OutputOptions
		checksums bool
	)
	cmd := &cobra.Command{
		Use:   "digest SOURCE | digest -- CMD [ARGS...]",
		Short: "Compute the Definition Digest of every tool, prompt and resource template",
		Long: `Compute the Definition Digest v1 of every tool, prompt and resource template a
server offers, the Set Digest of each kind, and the digest of its instructions.

SOURCE is a snapshot file (from 'mcpsign snapshot', or a bare tools/list,
prompts/list or resources/templates/list result), a command line that starts a
stdio server (split like a POSIX shell, never run through one), a Streamable
HTTP URL, or the words after --.

Definition Digest v1: the definition object exactly as received, read strictly
(invalid UTF-8, lone surrogates, repeated member names, non-RFC 8259 numbers
and numbers of magnitude 2^53 or more are refused), top-level "_meta" removed,
RFC 8785 (JCS), SHA-256. See docs/DIGEST.md.

A definition that cannot be digested is listed with its reason and the command
exits 1: a partial set is never reported as complete.`,
		Example: `  # A stdio server, its command after --
  mcpsign digest -- node server.js --stdio

  # The same, as one quoted command line
  mcpsign digest 'node server.js --stdio'

  # A Streamable HTTP server, with a bearer token mcpsign reads from the
  # environment (single quotes: the token is in no argument; $$ is a $)
  mcpsign digest https://mcp.example.com/mcp --header 'Authorization: Bearer ${TOKEN}'

  # A saved snapshot, as JSON for scripts
  mcpsign digest server.snapshot.json --format json

  # The statement's subjects as a checksums file, for actions/attest
  mcpsign digest server.snapshot.json --checksums > subjects.sha256`,
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := out.JSON()
			if err != nil {
				return err
			}
			snap, err := loadSource(cmd, a, &src, args)
			if err != nil {
				return err
			}
			if checksums {
				return writeChecksums(a.stdout, snap)
			}
			r := digest.Compute(snap)
			if asJSON {
				err = writeDigestJSON(a.stdout, snap, r)
			} else {
				err = writeDigestText(a.stdout, snap, r)
			}
			if err != nil {
				return err
			}
			if err := r.Err(); err != nil {
				return failed(err)
			}
			return nil
		},
	}
	src.AddFlags(cmd.Flags())
	out.AddFlags(cmd.Flags())
	cmd.Flags().BoolVar(&checksums, "checksums", false, "print the statement's subjects (one per definition, and the instructions) as a sha256sum checksums file, for actions/attest (docs/PUBLISHING.md)")
	cmd.MarkFlagsMutuallyExclusive("checksums", "format")
	return cmd
}

// writeChecksums writes the subjects of the statement 'mcpsign sign' would
// sign in sha256sum format. Invalid definitions fail with exit 1, writing
// nothing: a partial set is never attested.
func writeChecksums(w io.Writer, snap *digest.Snapshot) error {
	st, _, err := buildStatement(snap, attest.Options{})
	if err != nil {
		return err
	}
	b, err := st.Checksums()
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// loadSource reads the snapshot that the arguments name.
func loadSource(cmd *cobra.Command, a *app, src *options.SourceOptions, args []string) (*digest.Snapshot, error) {
	spec, err := src.Spec(cmd, args)
	if err != nil {
		return nil, err
	}
	opts, done, err := src.Options(a.stderr, a.stderrTerminal())
	if err != nil {
		return nil, err
	}
	defer done()
	return source.Load(cmd.Context(), spec, opts)
}

func writeDigestText(w io.Writer, snap *digest.Snapshot, r *digest.Result) error {
	name := snap.Server.Name
	if name == "" {
		name = "(unnamed server)"
	}
	fmt.Fprintf(w, "%s %s", textsafe.Escape(name), textsafe.Escape(snap.Server.Version))
	if snap.ProtocolVersion != "" {
		fmt.Fprintf(w, " · protocol %s", textsafe.Escape(snap.ProtocolVersion))
	}
	fmt.Fprintf(w, " · %s\n\n", r.CountText())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tKEY\tDIGEST")
	for _, d := range r.Definitions {
		key := textsafe.Escape(d.Key)
		if d.Key == "" {
			key = fmt.Sprintf("(#%d)", d.Index)
		}
		if d.Err != nil {
			fmt.Fprintf(tw, "%s\t%s\tINVALID: %s\n", d.Kind, key, textsafe.Escape(d.Err.Error()))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", d.Kind, key, d.Digest)
	}
	fmt.Fprintln(tw, "\t\t")
	for _, k := range digest.Kinds {
		set, ok := r.Sets[k]
		if !ok {
			set = "none (a definition is invalid)"
		}
		fmt.Fprintf(tw, "set\t%s\t%s\n", k.ListMember(), set)
	}
	ins := "none (the server sends no instructions)"
	if r.Instructions != "" {
		ins = r.Instructions
	}
	fmt.Fprintf(tw, "instructions\t\t%s\n", ins)
	return tw.Flush()
}

// digestJSON is the stable JSON form of the digest command (docs/JSON.md).
type digestJSON struct {
	ReportVersion   int                     `json:"reportVersion"`
	Server          digest.ServerInfo       `json:"server"`
	ProtocolVersion string                  `json:"protocolVersion"`
	Definitions     []definitionJSON        `json:"definitions"`
	Invalid         []invalidDefinitionJSON `json:"invalid"`
	Sets            map[string]*string      `json:"sets"`
	Counts          map[string]int          `json:"counts"`
	Instructions    *string                 `json:"instructions"`
}

type definitionJSON struct {
	Kind   digest.Kind `json:"kind"`
	Key    string      `json:"key"`
	Digest string      `json:"digest"`
}

type invalidDefinitionJSON struct {
	Kind    digest.Kind `json:"kind"`
	Key     string      `json:"key,omitempty"`
	Index   int         `json:"index"`
	Reason  string      `json:"reason"`
	Pointer *string     `json:"pointer,omitempty"`
}

func writeDigestJSON(w io.Writer, snap *digest.Snapshot, r *digest.Result) error {
	out := digestJSON{
		ReportVersion:   reportVersion,
		Server:          snap.Server,
		ProtocolVersion: snap.ProtocolVersion,
		Definitions:     []definitionJSON{},
		Invalid:         []invalidDefinitionJSON{},
		Sets:            map[string]*string{},
		Counts:          map[string]int{},
	}
	for _, d := range r.Definitions {
		if d.Err == nil {
			out.Definitions = append(out.Definitions, definitionJSON{d.Kind, d.Key, d.Digest})
			continue
		}
		inv := invalidDefinitionJSON{Kind: d.Kind, Key: d.Key, Index: d.Index, Reason: d.Err.Error()}
		var se *digest.SyntaxError
		if errors.As(d.Err, &se) {
			inv.Reason = se.Reason
			inv.Pointer = &se.Pointer
		}
		out.Invalid = append(out.Invalid, inv)
	}
	for _, k := range digest.Kinds {
		if s, ok := r.Sets[k]; ok {
			out.Sets[k.ListMember()] = &s
		} else {
			out.Sets[k.ListMember()] = nil
		}
		out.Counts[k.ListMember()] = r.Counts[k]
	}
	if r.Instructions != "" {
		out.Instructions = &r.Instructions
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
