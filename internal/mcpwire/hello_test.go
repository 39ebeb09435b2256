package mcpwire

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/digest"
)

const discoverOK = `{"resultType":"complete","supportedVersions":["2026-07-28","2025-11-25"],` +
	`"capabilities":{"tools":{"listChanged":true},"prompts":{},"resources":{"subscribe":false,"listChanged":true},"logging":{},"completions":{},` +
	`"experimental":{"x":{}},"extensions":{"dev.mcpsign/attestation":{"bundleUrl":"https://e.example/b"}}},"instructions":"hi",` +
	`"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}`

// TestParseDiscoverStrict: server/discover is read at least as strictly as
// the TypeScript SDK v2 client's 2026-07-28 codec (its DiscoverResult and
// ServerCapabilities schemas): each row it refuses is refused, naming the
// member by its JSON Pointer (docs/DISCOVERY.md, "How a hello is read").
func TestParseDiscoverStrict(t *testing.T) {
	for _, tt := range []struct {
		name, result, want string // want: "" accepted, else in the error
	}{
		{"complete", discoverOK, ""},
		{"minimal", `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{}}`, ""},
		{"tasks and unknown capabilities are not read", `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tasks":true,"other":1}}`, ""},
		{"capabilities.tools true", strings.Replace(discoverOK, `"tools":{"listChanged":true}`, `"tools":true`, 1), "/capabilities/tools: want an object, got true"},
		{"capabilities.tools null", strings.Replace(discoverOK, `"tools":{"listChanged":true}`, `"tools":null`, 1), "/capabilities/tools: want an object, got null"},
		{"capabilities.prompts array", strings.Replace(discoverOK, `"prompts":{}`, `"prompts":[]`, 1), "/capabilities/prompts: want an object"},
		{"capabilities.logging string", strings.Replace(discoverOK, `"logging":{}`, `"logging":"on"`, 1), "/capabilities/logging: want an object"},
		{"capabilities.completions number", strings.Replace(discoverOK, `"completions":{}`, `"completions":1`, 1), "/capabilities/completions: want an object"},
		{"listChanged a string", strings.Replace(discoverOK, `"listChanged":true}`, `"listChanged":"yes"}`, 1), "/capabilities/tools/listChanged: want a boolean"},
		{"subscribe null", strings.Replace(discoverOK, `"subscribe":false`, `"subscribe":null`, 1), "/capabilities/resources/subscribe: want a boolean"},
		{"experimental member not an object", strings.Replace(discoverOK, `"x":{}`, `"x":true`, 1), "/capabilities/experimental/x: want an object"},
		{"extensions member not an object", strings.Replace(discoverOK, `"extensions":{"dev.mcpsign/attestation":{"bundleUrl":"https://e.example/b"}}`, `"extensions":{"a/b":"x"}`, 1), "/capabilities/extensions/a~1b: want an object"},
		{"extensions not an object", strings.Replace(discoverOK, `"extensions":{"dev.mcpsign/attestation":{"bundleUrl":"https://e.example/b"}}`, `"extensions":[]`, 1), "/capabilities/extensions: want an object"},
		{"capabilities missing", `{"resultType":"complete","supportedVersions":["2026-07-28"]}`, "/capabilities: want an object, got nothing"},
		{"capabilities null", `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":null}`, "/capabilities: want an object, got null"},
		{"capabilities true", `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":true}`, "/capabilities: want an object, got true"},
		{"resultType missing", strings.Replace(discoverOK, `"resultType":"complete",`, ``, 1), "/resultType is missing"},
		{"resultType input_required", strings.Replace(discoverOK, `"resultType":"complete"`, `"resultType":"input_required"`, 1), `/resultType: want "complete"`},
		{"resultType not a string", strings.Replace(discoverOK, `"resultType":"complete"`, `"resultType":1`, 1), `/resultType: want "complete", got 1`},
		{"supportedVersions missing", `{"resultType":"complete","capabilities":{}}`, "/supportedVersions is missing"},
		{"supportedVersions a number inside", strings.Replace(discoverOK, `["2026-07-28","2025-11-25"]`, `["2026-07-28",20251125]`, 1), "/supportedVersions/1: want a string, got 20251125"},
		{"supportedVersions a string", strings.Replace(discoverOK, `["2026-07-28","2025-11-25"]`, `"2026-07-28"`, 1), "/supportedVersions: want an array of strings"},
		{"instructions null", strings.Replace(discoverOK, `"instructions":"hi"`, `"instructions":null`, 1), "/instructions: want a string, got null"},
		{"instructions an object", strings.Replace(discoverOK, `"instructions":"hi"`, `"instructions":{"text":"hi"}`, 1), "/instructions: want a string"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, ok, err := ParseDiscover([]byte(tt.result), nil, nil)
			if tt.want == "" {
				if err != nil || !ok || h == nil {
					t.Fatalf("refused: %v (ok %v)", err, ok)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrProtocol and %q", err, tt.want)
			}
		})
	}
}

// TestParseInitializeCapabilityTypes: the initialize result's capability
// members are checked as server/discover's (both SDKs refuse them), while
// what the initialize handshake may leave out stays optional.
func TestParseInitializeCapabilityTypes(t *testing.T) {
	for _, tt := range []struct {
		name, result, want string
	}{
		{"fine", `{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":false}},"serverInfo":{"name":"s","version":"1"}}`, ""},
		{"no capabilities", `{"protocolVersion":"2025-11-25","serverInfo":{"name":"s","version":"1"}}`, ""},
		{"null members count as absent, as go-sdk reads them", `{"protocolVersion":"2025-11-25","capabilities":{"tools":null,"resources":{"subscribe":null}}}`, ""},
		{"tools true", `{"protocolVersion":"2025-11-25","capabilities":{"tools":true},"serverInfo":{"name":"s","version":"1"}}`, "/capabilities/tools: want an object, got true"},
		{"experimental member a string", `{"protocolVersion":"2025-11-25","capabilities":{"experimental":{"dev.mcpsign/attestation":"x"}}}`, "/capabilities/experimental/dev.mcpsign~1attestation: want an object"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseInitialize([]byte(tt.result))
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// tsDiscover is the TypeScript SDK v2 client's DiscoverResult schema
// (2026-07-28 codec), in Go types: what ParseDiscover accepts must decode
// into it.
type tsDiscover struct {
	ResultType        *string   `json:"resultType"`
	SupportedVersions *[]string `json:"supportedVersions"`
	Capabilities      *struct {
		Experimental map[string]map[string]any `json:"experimental"`
		Logging      map[string]any            `json:"logging"`
		Completions  map[string]any            `json:"completions"`
		Prompts      *struct {
			ListChanged *bool `json:"listChanged"`
		} `json:"prompts"`
		Resources *struct {
			Subscribe   *bool `json:"subscribe"`
			ListChanged *bool `json:"listChanged"`
		} `json:"resources"`
		Tools *struct {
			ListChanged *bool `json:"listChanged"`
		} `json:"tools"`
		Extensions map[string]map[string]any `json:"extensions"`
	} `json:"capabilities"`
	Instructions *string `json:"instructions"`
}

// FuzzParseDiscover: ParseDiscover never panics, and whatever it accepts
// the TypeScript SDK v2 client's schema accepts too (resultType "complete",
// supportedVersions strings, capabilities an object of objects, instructions
// a string), and its capabilities are objects.
func FuzzParseDiscover(f *testing.F) {
	f.Add([]byte(discoverOK))
	f.Add([]byte(`{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":true}}`))
	f.Add([]byte(`{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":null,"experimental":{"a":1}},"instructions":null}`))
	f.Add([]byte(`{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"Tools":{},"tools":{"listChanged":1}}}`))
	f.Add([]byte(`{"supportedVersions":[1],"capabilities":{}}`))
	f.Add([]byte(`{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{},"instructions":"a","instructions":"b"}`))
	f.Add([]byte(`{"resultType":"complete","supportedVersions":["2026-07-28","\ud800"],"capabilities":{"tools":{"listChanged":true,"listChanged":1}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, ok, err := ParseDiscover(data, nil, nil)
		if err != nil || !ok {
			return
		}
		var ts tsDiscover
		if err := json.Unmarshal(data, &ts); err != nil {
			t.Fatalf("accepted, but the TypeScript SDK v2 schema refuses it: %v\n%s", err, data)
		}
		if ts.ResultType == nil || *ts.ResultType != "complete" || ts.SupportedVersions == nil || ts.Capabilities == nil {
			t.Fatalf("accepted without resultType, supportedVersions or capabilities: %s", data)
		}
		if strings.Contains(string(data), `"instructions"`) && ts.Instructions == nil && h.Instructions != nil {
			t.Fatalf("instructions read from a non-string: %s", data)
		}
		for name, v := range h.Caps {
			if jsonKind(v) != '{' && slices.Contains(capabilityNames, name) {
				t.Fatalf("capability %s accepted as %s", name, v)
			}
		}
	})
}

// TestParseDiscoverServerInfo: the server's info is the result's
// serverInfo, or where go-sdk puts it (_meta's
// io.modelcontextprotocol/serverInfo) only when the result has none.
func TestParseDiscoverServerInfo(t *testing.T) {
	const head = `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{}`
	const meta = `"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"m","version":"1"}}`
	for _, tt := range []struct {
		name, result string
		want         digest.ServerInfo
	}{
		{"serverInfo", head + `,"serverInfo":{"name":"s","version":"2"}}`, digest.ServerInfo{Name: "s", Version: "2"}},
		{"in _meta", head + `,` + meta + `}`, digest.ServerInfo{Name: "m", Version: "1"}},
		{"both: serverInfo", head + `,"serverInfo":{"name":"s","version":"2"},` + meta + `}`, digest.ServerInfo{Name: "s", Version: "2"}},
		{"_meta null", head + `,"_meta":null}`, digest.ServerInfo{}},
		{"_meta without it", head + `,"_meta":{"other":1}}`, digest.ServerInfo{}},
		{"neither", head + `}`, digest.ServerInfo{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, ok, err := ParseDiscover([]byte(tt.result), nil, nil)
			if err != nil || !ok {
				t.Fatalf("refused: %v (ok %v)", err, ok)
			}
			if h.Server != tt.want {
				t.Errorf("server %+v, want %+v", h.Server, tt.want)
			}
		})
	}
}

// TestMetaVersion: the version a request _meta asks for, read strictly.
func TestMetaVersion(t *testing.T) {
	for _, tt := range []struct {
		name, meta string
		nilMeta    bool
		want       string
		ok         bool
	}{
		{name: "nil", nilMeta: true},
		{name: "version", meta: `{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`, want: "2026-07-28", ok: true},
		{name: "escaped", meta: `{"io.modelcontextprotocol/protocolVersion":"2026\u002d07-28","x":1}`, want: "2026-07-28", ok: true},
		{name: "none", meta: `{"x":"2026-07-28"}`},
		{name: "not an object", meta: `"2026-07-28"`},
		{name: "repeated", meta: `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/protocolVersion":"2025-11-25"}`},
		{name: "a number", meta: `{"io.modelcontextprotocol/protocolVersion":20260728}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var meta []byte
			if !tt.nilMeta {
				meta = []byte(tt.meta)
			}
			got, ok := MetaVersion(meta)
			if got != tt.want || ok != tt.ok {
				t.Errorf("MetaVersion(%s) = %q, %v; want %q, %v", meta, got, ok, tt.want, tt.ok)
			}
		})
	}
}

// TestRequestMeta: mcpsign's own modern requests carry the client's info
// and capabilities when it sent them, the server's version, and defaults
// otherwise.
func TestRequestMeta(t *testing.T) {
	const (
		info = `{"name":"host","version":"3"}`
		caps = `{"roots":{}}`
	)
	for _, tt := range []struct {
		name       string
		clientMeta []byte
		clientInfo json.RawMessage
		want       string
	}{
		{name: "the client's", clientMeta: []byte(`{"io.modelcontextprotocol/clientInfo":` + info + `,"io.modelcontextprotocol/clientCapabilities":` + caps + `,"other":1}`),
			want: `{"io.modelcontextprotocol/clientCapabilities":` + caps + `,"io.modelcontextprotocol/clientInfo":` + info + `,"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`},
		{name: "the client's info, default capabilities", clientMeta: []byte(`{"io.modelcontextprotocol/clientInfo":` + info + `}`), clientInfo: json.RawMessage(`{"name":"x","version":"1"}`),
			want: `{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":` + info + `,"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`},
		{name: "none: the stand-in", clientInfo: json.RawMessage(`{"name":"x","version":"1"}`),
			want: `{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"x","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`},
		{name: "none: mcpsign",
			want: `{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"mcpsign","version":"devel"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`},
		{name: "unreadable: the defaults", clientMeta: []byte(`{"io.modelcontextprotocol/clientInfo":` + info + `,"io.modelcontextprotocol/clientInfo":` + info + `}`),
			want: `{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"mcpsign","version":"devel"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RequestMeta(tt.clientMeta, ProtocolModern, tt.clientInfo)
			if err != nil || string(got) != tt.want {
				t.Errorf("RequestMeta = %s, %v; want %s", got, err, tt.want)
			}
		})
	}
}
