package hosts

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/tailscale/hujson"

	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// jsonDoc is a JSON or JSONC file, edited through hujson so that every byte
// outside the edited values is kept.
type jsonDoc struct {
	host    Host
	root    hujson.Value
	entries []jsonEntry
	// splitDotted: the host splits dotted top-level names (dottedMaps).
	splitDotted bool
}

// jsonEntry is a server entry and where its command line is written.
type jsonEntry struct {
	srv Server
	// obj holds the command (cmdKey) and args members: the entry itself,
	// or Zed's older nested "command": {"path", "args"} object.
	obj    *hujson.Object
	cmdKey string
	// remote is the entry object of a remote entry, and remoteKey the
	// member that holds its URL.
	remote    *hujson.Object
	remoteKey string
}

// parseJSON reads data as h's file whose servers are in the maps at paths.
func parseJSON(h Host, paths [][]string, data []byte) (document, error) {
	root, err := hujson.Parse(data)
	if err != nil {
		return nil, err
	}
	if _, ok := root.Value.(*hujson.Object); !ok {
		return nil, fmt.Errorf("the top level is not an object")
	}
	maps := dottedMaps(paths)
	d := &jsonDoc{host: h, root: root, splitDotted: maps != nil}
	for _, path := range paths {
		d.collect(&root, path, "", "")
	}
	if maps != nil {
		d.dotted(root.Value.(*hujson.Object), paths, maps)
	}
	return d, nil
}

// dottedMaps returns the maps of a file whose host splits dotted top-level
// names, as VS Code's settings reader does (one of its maps is a dotted
// name, "mcp.servers"): every map as the names it is reached through, once
// each. It returns nil for any other file.
func dottedMaps(paths [][]string) [][]string {
	var out [][]string
	dotted := false
	for _, p := range paths {
		var names []string
		for _, n := range p {
			names = append(names, strings.Split(n, ".")...)
		}
		dotted = dotted || len(p) == 1 && len(names) > 1
		if !slices.ContainsFunc(out, func(o []string) bool { return slices.Equal(o, names) }) {
			out = append(out, names)
		}
	}
	if !dotted {
		return nil
	}
	return out
}

// dotted reads the top-level members of root whose dotted names reach into
// a map (docs/HOSTS.md, VS Code): one that is a map not in paths (the
// dotted "mcp.mcpServers") is read as a map; one that names a server in a
// map ("mcp.servers.NAME") or a member of one ("mcp.servers.NAME.command")
// is listed as that server, with a Problem, never edited; and every entry
// of that server in the maps gets a Problem too and is not wrapped, since
// what VS Code runs is not that entry alone (the later of the spellings
// replaces the earlier, a dotted member changes the server it names).
func (d *jsonDoc) dotted(root *hujson.Object, paths [][]string, maps [][]string) {
	own := map[int]bool{}          // the entries of dotted servers
	changes := map[string]string{} // server name: the first dotted member that changes it
	for i := range root.Members {
		m := &root.Members[i]
		name := literalString(m.Name.Value)
		if !strings.Contains(name, ".") {
			continue
		}
		names := strings.Split(name, ".")
		for _, mp := range maps {
			switch {
			case slices.Equal(names, mp):
				if !slices.ContainsFunc(paths, func(p []string) bool { return len(p) == 1 && p[0] == name }) {
					d.collect(&m.Value, nil, quoteKey(name), d.replaced(root, i, nil, true))
				}
			case len(names) > len(mp) && slices.Equal(names[:len(mp)], mp):
				srv := names[len(mp)]
				e := jsonEntry{srv: Server{Name: srv, Where: strings.TrimPrefix(quoteKey(name), ".")}}
				if len(names) == len(mp)+1 {
					d.read(&e, &m.Value)
					e.srv.Wrapped = nil
					e.srv.Problem = fmt.Sprintf("the dotted setting %s is server %s as VS Code reads it; mcpsign edits a server only inside its map: move it into \"mcp\": {\"servers\": …}", textsafe.RawQuote(name), textsafe.RawQuote(srv))
				} else {
					e.srv.Kind = Stdio
					e.srv.Problem = fmt.Sprintf("the dotted setting %s changes server %s as VS Code reads it; mcpsign cannot tell what runs: move it into the server's entry", textsafe.RawQuote(name), textsafe.RawQuote(srv))
				}
				if e.srv.Kind == Unknown {
					e.srv.Problem = "" // not enforced anyway
				}
				own[len(d.entries)] = true
				d.entries = append(d.entries, e)
				if _, ok := changes[srv]; !ok {
					changes[srv] = name
				}
			}
		}
	}
	for i := range d.entries {
		e := &d.entries[i]
		if by, ok := changes[e.srv.Name]; ok && !own[i] {
			e.srv.Kind, e.srv.Wrapped = Stdio, nil
			e.srv.Problem = fmt.Sprintf("VS Code's dotted setting %s changes this server: what runs is not this entry alone; move it into this entry or remove it", textsafe.RawQuote(by))
		}
	}
}

// collect finds the server map at path under v and reads its entries;
// dead, when not empty, says why the map is not what the host reads.
func (d *jsonDoc) collect(v *hujson.Value, path []string, where, dead string) {
	obj, ok := v.Value.(*hujson.Object)
	if !ok {
		return
	}
	if len(path) == 0 {
		for i := range obj.Members {
			m := &obj.Members[i]
			name := literalString(m.Name.Value)
			e := jsonEntry{srv: Server{Name: name, Where: strings.TrimPrefix(where, ".")}}
			d.read(&e, &m.Value)
			if why := cmp.Or(dead, d.replaced(obj, i, nil, false)); why != "" {
				// Not what runs: never wrapped, nor reported wrapped.
				e.srv.Wrapped, e.srv.Problem = nil, why
			}
			d.entries = append(d.entries, e)
		}
		return
	}
	for i := range obj.Members {
		m := &obj.Members[i]
		name := literalString(m.Name.Value)
		if path[0] != "*" && name != path[0] {
			continue
		}
		why := cmp.Or(dead, d.replaced(obj, i, path[1:], where == ""))
		d.collect(&m.Value, path[1:], where+quoteKey(name), why)
	}
}

// replaced says why member i of obj is not what the host reads, "" when it
// is: a later member of the same name replaces it (JSON readers keep the
// last), or, at the top level of a file whose host splits dotted names,
// a member whose dotted name reaches the map through it and comes later
// (VS Code: a later "mcp" replaces an earlier "mcp.servers", a later
// "mcp.servers" the servers of an earlier "mcp"; a name repeated keeps its
// first place, as in a JavaScript object). rest is the map's path below
// the member.
func (d *jsonDoc) replaced(obj *hujson.Object, i int, rest []string, top bool) string {
	name := literalString(obj.Members[i].Name.Value)
	for j := i + 1; j < len(obj.Members); j++ {
		if n := literalString(obj.Members[j].Name.Value); n == name {
			return fmt.Sprintf("a later member %s replaces this one: the host reads that one only", textsafe.RawQuote(n))
		}
	}
	if !top || !d.splitDotted {
		return ""
	}
	first := map[string]int{}
	for j := range obj.Members {
		if n := literalString(obj.Members[j].Name.Value); !hasKey(first, n) {
			first[n] = j
		}
	}
	full := append(strings.Split(name, "."), rest...)
	for j := first[name] + 1; j < len(obj.Members); j++ {
		n := literalString(obj.Members[j].Name.Value)
		if later := strings.Split(n, "."); first[n] == j && len(later) <= len(full) && slices.Equal(full[:len(later)], later) {
			return fmt.Sprintf("a later member %s replaces this one: the host reads that one only", textsafe.RawQuote(n))
		}
	}
	return ""
}

func hasKey(m map[string]int, k string) bool {
	_, ok := m[k]
	return ok
}

func (d *jsonDoc) read(e *jsonEntry, v *hujson.Value) {
	e.srv.Kind = Unknown
	obj, ok := v.Value.(*hujson.Object)
	if !ok {
		e.srv.Problem = "the entry is not an object"
		return
	}
	if cmd := member(obj, "command"); cmd != nil {
		e.obj, e.cmdKey = obj, "command"
		if nested, ok := cmd.Value.(*hujson.Object); ok { // Zed's older form
			e.obj, e.cmdKey = nested, "path"
		}
		e.srv.Kind = Stdio
		argv, problem := readArgv(e.obj, e.cmdKey)
		e.srv.Argv, e.srv.Problem = argv, cmp.Or(problem, d.notStdio(obj))
		e.srv.Env = memberNames(member(e.obj, "env"))
		if e.obj != obj {
			e.srv.Env = append(e.srv.Env, memberNames(member(obj, "env"))...)
		}
		e.srv.EnvFile = member(obj, "envFile") != nil
		// A remote entry wrap turned into this one keeps its headers: read
		// for Redact only.
		e.srv.Headers, _ = readHeaders(member(obj, "headers"))
		classify(&e.srv)
		return
	}
	for _, k := range d.host.RemoteKeys {
		if u := member(obj, k); u != nil {
			e.srv.Kind = Remote
			e.srv.URL = literalString(u.Value)
			e.remote, e.remoteKey = obj, k
			if up := member(obj, UpstreamKey); up != nil {
				e.srv.Upstream = literalString(up.Value)
			}
			e.srv.Problem = d.remoteProblem(e)
			return
		}
	}
}

// notStdio says why a host may not run the command of obj, an entry with
// a command, "" when it runs it: the entry also has a URL member (Gemini
// CLI takes httpUrl, then url, before command) or a type other than
// "stdio" (VS Code and Claude Code go by the type). Such an entry is
// neither wrapped nor enforced (docs/HOSTS.md "What counts as enforced").
func (d *jsonDoc) notStdio(obj *hujson.Object) string {
	for _, k := range d.host.RemoteKeys {
		if memberIndex(obj, k) >= 0 {
			return fmt.Sprintf("it has a URL (%s) besides its command: the host may reach the URL and not run the command", textsafe.RawQuote(k))
		}
	}
	if t := member(obj, "type"); t != nil {
		if lit, ok := t.Value.(hujson.Literal); !ok || string(lit) != `"stdio"` {
			return fmt.Sprintf("its type is %s, not \"stdio\": the host may not run its command", textsafe.RawQuote(literalString(t.Value)))
		}
	}
	return ""
}

// remoteProblem reads the headers of e, a remote entry, and says why wrap
// cannot turn it into a stdio entry in front of its URL, "" when it can
// (docs/HOSTS.md "Remote servers").
func (d *jsonDoc) remoteProblem(e *jsonEntry) string {
	e.srv.frontProblem = d.urlProblem(e)
	if e.srv.frontProblem != "" {
		return e.srv.frontProblem
	}
	for _, h := range e.srv.Headers {
		arg, problem := headerArg(d.host, h)
		if problem != "" {
			return problem
		}
		e.srv.headerArgs = append(e.srv.headerArgs, arg)
	}
	return ""
}

// urlProblem is remoteProblem but for the translation of the headers: why
// e's URL member cannot be edited, "" when it can.
func (d *jsonDoc) urlProblem(e *jsonEntry) string {
	obj := e.remote
	u := member(obj, e.remoteKey)
	if !isString(u.Value) {
		return fmt.Sprintf("%s is not a string", textsafe.RawQuote(e.remoteKey))
	}
	hs, problem := readHeaders(member(obj, "headers"))
	e.srv.Headers = hs
	if problem != "" {
		return problem
	}
	if e.remoteKey != d.host.RemoteKeys[0] {
		if d.host.Name == "gemini" {
			return fmt.Sprintf("%s is an SSE server to %s: the proxy speaks Streamable HTTP (%s) only", textsafe.RawQuote(e.remoteKey), d.host.Display, textsafe.RawQuote(d.host.RemoteKeys[0]))
		}
		return fmt.Sprintf("the URL is under %s: mcpsign wraps the %s spelling only", textsafe.RawQuote(e.remoteKey), textsafe.RawQuote(d.host.RemoteKeys[0]))
	}
	if problem := checkRemoteURL(e.srv.URL); problem != "" {
		return problem
	}
	for i := range obj.Members {
		n := obj.Members[i].Name.Value
		name := literalString(n)
		if name != e.remoteKey && name != "type" && slices.Contains(d.host.RemoteKeys, name) || name == "args" {
			return fmt.Sprintf("it also has %s", textsafe.RawQuote(name))
		}
		if (name == e.remoteKey || name == "type") && string(n.(hujson.Literal)) != string(hujson.String(name)) {
			return fmt.Sprintf("the member %s is written with escapes", textsafe.RawQuote(name))
		}
	}
	for _, k := range []string{e.remoteKey, "type", "headers", UpstreamKey} {
		if memberCount(obj, k) > 1 {
			return fmt.Sprintf("it has %s twice", textsafe.RawQuote(k))
		}
	}
	if up := member(obj, UpstreamKey); up != nil && (!isString(up.Value) || checkRemoteURL(literalString(up.Value)) != "") {
		return fmt.Sprintf("%s is not the server URL a front's wrap keeps", textsafe.RawQuote(UpstreamKey))
	}
	if t := member(obj, "type"); t != nil {
		if lit, ok := t.Value.(hujson.Literal); !ok || string(lit) != `"http"` {
			return fmt.Sprintf("its type is %s, not \"http\": the proxy speaks Streamable HTTP only", textsafe.RawQuote(literalString(t.Value)))
		}
	}
	return ""
}

// readHeaders reads a "headers" member: an object of strings.
func readHeaders(v *hujson.Value) ([]Header, string) {
	if v == nil {
		return nil, ""
	}
	obj, ok := v.Value.(*hujson.Object)
	if !ok {
		return nil, `"headers" is not an object`
	}
	var out []Header
	for _, m := range obj.Members {
		name := literalString(m.Name.Value)
		if !isString(m.Value.Value) {
			return out, fmt.Sprintf("header %s is not a string", textsafe.RawQuote(name))
		}
		if slices.ContainsFunc(out, func(h Header) bool { return strings.EqualFold(h.Name, name) }) {
			return out, fmt.Sprintf("header %s is given twice", textsafe.RawQuote(name))
		}
		lit := string(m.Value.Value.(hujson.Literal))
		out = append(out, Header{Name: name, Value: literalString(m.Value.Value), raw: lit[1 : len(lit)-1]})
	}
	return out, ""
}

func memberNames(v *hujson.Value) []string {
	if v == nil {
		return nil
	}
	obj, ok := v.Value.(*hujson.Object)
	if !ok {
		return nil
	}
	var out []string
	for _, m := range obj.Members {
		out = append(out, literalString(m.Name.Value))
	}
	return out
}

func memberCount(obj *hujson.Object, name string) int {
	n := 0
	for _, m := range obj.Members {
		if literalString(m.Name.Value) == name {
			n++
		}
	}
	return n
}

// readArgv reads the command line of obj: cmdKey's string then "args".
func readArgv(obj *hujson.Object, cmdKey string) ([]string, string) {
	cmd := member(obj, cmdKey)
	if cmd == nil || !isString(cmd.Value) {
		return nil, fmt.Sprintf("%s is not a string", textsafe.RawQuote(cmdKey))
	}
	argv := []string{literalString(cmd.Value)}
	args := member(obj, "args")
	if args == nil {
		return argv, ""
	}
	arr, ok := args.Value.(*hujson.Array)
	if !ok {
		return argv, `"args" is not an array`
	}
	for _, el := range arr.Elements {
		if !isString(el.Value) {
			return argv, `"args" has a member that is not a string`
		}
		argv = append(argv, literalString(el.Value))
	}
	return argv, ""
}

func (d *jsonDoc) servers() []Server {
	out := make([]Server, len(d.entries))
	for i, e := range d.entries {
		out[i] = e.srv
	}
	return out
}

func (d *jsonDoc) bytes() []byte { return d.root.Pack() }

func (d *jsonDoc) wrapEntry(i int, self string, prefix []string) {
	wrapJSON(d.entries[i], self, prefix)
}

func (d *jsonDoc) unwrapEntry(i int) string {
	e := d.entries[i]
	remote := e.srv.Wrapped != nil && isRemoteOriginal(e.srv.Wrapped.Original) && e.cmdKey == "command" && len(d.host.RemoteKeys) > 0
	if remote && slices.ContainsFunc(d.host.RemoteKeys, func(k string) bool { return member(e.obj, k) != nil }) {
		return "it has a URL member besides its command: unwrap it by hand"
	}
	unwrapJSON(e)
	if remote {
		// A remote entry wrap turned into a stdio one: the URL goes back
		// under the host's key, and its type back to "http".
		ci := memberIndex(e.obj, "command")
		e.obj.Members[ci].Name.Value = hujson.String(d.host.RemoteKeys[0])
		if t := member(e.obj, "type"); t != nil {
			if lit, ok := t.Value.(hujson.Literal); ok && string(lit) == `"stdio"` {
				t.Value = hujson.String("http")
			}
		}
	}
	return ""
}

func (d *jsonDoc) rewrapEntry(i int, self string, prefix []string) string {
	e := d.entries[i]
	unwrapJSON(e)
	wrapJSON(e, self, prefix)
	return ""
}

// wrapRemote renames the URL's member to "command", moves the URL's
// literal after prefix into a new "args", writes self as the command, and
// the type, if any, as "stdio". The headers member is kept as it is (a
// host reads none for a stdio entry): unwrap renames the member back.
func (d *jsonDoc) wrapRemote(i int, self string, prefix []string) string {
	e := d.entries[i]
	ui := memberIndex(e.remote, e.remoteKey)
	e.remote.Members[ui].Name.Value = hujson.String("command")
	if t := member(e.remote, "type"); t != nil {
		t.Value = hujson.String("stdio")
	}
	wrapJSON(jsonEntry{obj: e.remote, cmdKey: "command"}, self, prefix)
	return ""
}

// frontRemote writes front as the URL of entry i and, unless the entry has
// it already (pointed at another front), a new UpstreamKey member right
// after the URL's, holding the URL's literal byte for byte, laid out as
// the URL's member: unfrontRemote removes it and gives the bytes back.
func (d *jsonDoc) frontRemote(i int, front string) string {
	e := d.entries[i]
	ui := memberIndex(e.remote, e.remoteKey)
	u := &e.remote.Members[ui]
	orig := slices.Clone(u.Value.Value.(hujson.Literal))
	u.Value.Value = hujson.String(front)
	if memberIndex(e.remote, UpstreamKey) >= 0 {
		return ""
	}
	m := hujson.ObjectMember{
		Name:  hujson.Value{BeforeExtra: layout(u.Name.BeforeExtra, "\n"), Value: hujson.String(UpstreamKey)},
		Value: hujson.Value{BeforeExtra: layout(u.Value.BeforeExtra, " "), Value: orig},
	}
	if ui == len(e.remote.Members)-1 && u.Value.AfterExtra != nil {
		m.Value.AfterExtra = hujson.Extra{} // keep the trailing comma
	}
	e.remote.Members = slices.Insert(e.remote.Members, ui+1, m)
	return ""
}

// unfrontRemote is frontRemote's inverse.
func (d *jsonDoc) unfrontRemote(i int) string {
	e := d.entries[i]
	ui, ki := memberIndex(e.remote, e.remoteKey), memberIndex(e.remote, UpstreamKey)
	if ki < 0 || !isString(e.remote.Members[ki].Value.Value) {
		return fmt.Sprintf("%s is not the server URL a front's wrap keeps: restore the URL by hand", textsafe.RawQuote(UpstreamKey))
	}
	e.remote.Members[ui].Value.Value = slices.Clone(e.remote.Members[ki].Value.Value.(hujson.Literal))
	if ki == len(e.remote.Members)-1 && ki > 0 { // the trailing comma, if any, goes back to the member before
		prev, removed := &e.remote.Members[ki-1].Value, e.remote.Members[ki].Value
		switch {
		case removed.AfterExtra == nil:
			prev.AfterExtra = nil
		case prev.AfterExtra == nil:
			prev.AfterExtra = hujson.Extra{}
		}
	}
	e.remote.Members = slices.Delete(e.remote.Members, ki, ki+1)
	return ""
}

// The layouts of the elements wrap inserts when the entry had no "args"
// (created) or an empty one (filled): unwrap tells the two apart by them,
// so that it removes the member it created and keeps an empty one.
func createdLayout(n int) []string {
	out := make([]string, n)
	for i := 1; i < n; i++ {
		out[i] = " "
	}
	return out
}

func filledLayout(n int) []string { return make([]string, n) }

// wrapJSON moves the command's literal, byte for byte, after prefix at the
// front of args, and writes self as the command. The elements that were in
// args are not touched.
func wrapJSON(e jsonEntry, self string, prefix []string) {
	ci := memberIndex(e.obj, e.cmdKey)
	cmd := &e.obj.Members[ci].Value
	lits := make([]hujson.Literal, 0, len(prefix)+1)
	for _, p := range prefix {
		lits = append(lits, hujson.String(p))
	}
	lits = append(lits, slices.Clone(cmd.Value.(hujson.Literal)))
	cmd.Value = hujson.String(self)

	ai := memberIndex(e.obj, "args")
	if ai < 0 {
		arr := &hujson.Array{Elements: elements(lits, createdLayout(len(lits)))}
		m := hujson.ObjectMember{
			Name:  hujson.Value{BeforeExtra: layout(e.obj.Members[ci].Name.BeforeExtra, "\n"), Value: hujson.String("args")},
			Value: hujson.Value{BeforeExtra: layout(cmd.BeforeExtra, " "), Value: arr},
		}
		if ci == len(e.obj.Members)-1 && cmd.AfterExtra != nil {
			m.Value.AfterExtra = hujson.Extra{} // keep the trailing comma
		}
		e.obj.Members = slices.Insert(e.obj.Members, ci+1, m)
		return
	}
	arr := e.obj.Members[ai].Value.Value.(*hujson.Array)
	if len(arr.Elements) == 0 {
		arr.Elements = elements(lits, filledLayout(len(lits)))
		return
	}
	// The first element's own extra moves to the front (with any comment
	// in it); the first element gets the array's separator. Unwrap moves
	// it back.
	first := arr.Elements[0].BeforeExtra
	sep := hujson.Extra(" ")
	switch {
	case len(arr.Elements) > 1:
		sep = layout(arr.Elements[1].BeforeExtra, " ")
	case bytes.Contains(first, []byte("\n")):
		sep = layout(first, " ")
	}
	lay := make([]string, len(lits))
	lay[0] = string(first)
	for i := 1; i < len(lay); i++ {
		lay[i] = string(sep)
	}
	arr.Elements[0].BeforeExtra = slices.Clone(sep)
	arr.Elements = append(elements(lits, lay), arr.Elements...)
}

// unwrapJSON is wrapJSON's inverse.
func unwrapJSON(e jsonEntry) {
	ci := memberIndex(e.obj, e.cmdKey)
	ai := memberIndex(e.obj, "args")
	arr := e.obj.Members[ai].Value.Value.(*hujson.Array)
	argv := []string{literalString(e.obj.Members[ci].Value.Value)}
	for _, el := range arr.Elements {
		argv = append(argv, literalString(el.Value))
	}
	dash := dashIndex(argv) - 1 // index in args
	removed := arr.Elements[:dash+2]
	e.obj.Members[ci].Value.Value = slices.Clone(removed[dash+1].Value.(hujson.Literal))
	rest := slices.Clone(arr.Elements[dash+2:])
	if len(rest) > 0 {
		rest[0].BeforeExtra = slices.Clone(removed[0].BeforeExtra)
		arr.Elements = rest
		return
	}
	lay := make([]string, len(removed))
	for i, el := range removed {
		lay[i] = string(el.BeforeExtra)
	}
	if ai == ci+1 && len(arr.AfterExtra) == 0 && slices.Equal(lay, createdLayout(len(lay))) {
		if ai == len(e.obj.Members)-1 { // the trailing comma, if any, goes back to the command
			cmd := &e.obj.Members[ci].Value
			switch {
			case e.obj.Members[ai].Value.AfterExtra == nil:
				cmd.AfterExtra = nil
			case cmd.AfterExtra == nil:
				cmd.AfterExtra = hujson.Extra{}
			}
		}
		e.obj.Members = slices.Delete(e.obj.Members, ai, ai+1)
		return
	}
	arr.Elements = nil
}

func elements(lits []hujson.Literal, lay []string) []hujson.Value {
	out := make([]hujson.Value, len(lits))
	for i, l := range lits {
		out[i] = hujson.Value{BeforeExtra: hujson.Extra(lay[i]), Value: l}
	}
	return out
}

// layout returns the whitespace of extra without its comments: a newline
// and the indentation of its last line when it spans lines, extra itself
// when it is only blanks, def otherwise.
func layout(extra hujson.Extra, def string) hujson.Extra {
	s := string(extra)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		indent := s[i+1:]
		if strings.Trim(indent, " \t") != "" {
			indent = ""
		}
		return hujson.Extra("\n" + indent)
	}
	if strings.Trim(s, " \t\r") == "" {
		return hujson.Extra(s)
	}
	return hujson.Extra(def)
}

func member(obj *hujson.Object, name string) *hujson.Value {
	if i := memberIndex(obj, name); i >= 0 {
		return &obj.Members[i].Value
	}
	return nil
}

// memberIndex returns the index of the last member called name (the one a
// JSON reader keeps), or -1.
func memberIndex(obj *hujson.Object, name string) int {
	for i := len(obj.Members) - 1; i >= 0; i-- {
		if literalString(obj.Members[i].Name.Value) == name {
			return i
		}
	}
	return -1
}

func isString(v hujson.ValueTrimmed) bool {
	l, ok := v.(hujson.Literal)
	return ok && l.Kind() == '"'
}

func literalString(v hujson.ValueTrimmed) string {
	if l, ok := v.(hujson.Literal); ok && l.Kind() == '"' {
		return l.String()
	}
	return ""
}
