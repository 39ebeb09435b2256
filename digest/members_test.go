package digest

import (
	"strings"
	"testing"
)

func TestMembers(t *testing.T) {
	tests := []struct {
		in    string
		names []string
		err   string
	}{
		{`{"b":1,"a":{"c":[true,null,"x"]}}`, []string{"b", "a"}, ""},
		{` {} `, nil, ""},
		{`{"id":1,"\u0069d":2}`, nil, `repeated member "id"`},
		{`{"a":"\x"}`, nil, "invalid escape"},
		{`{"a":"\u12zz"}`, nil, `invalid \u escape`},
		{`{"\ud800":1}`, nil, "lone high surrogate"},
		{`{"a":01}`, nil, "invalid number"},
		{`{"a":1} x`, nil, "unexpected data"},
		{`[1]`, nil, "not a JSON object"},
	}
	for _, tc := range tests {
		names, values, err := Members([]byte(tc.in))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || strings.Join(names, ",") != strings.Join(tc.names, ",") || len(values) != len(tc.names) {
			t.Errorf("%s: %q %v", tc.in, names, err)
		}
	}
	// A listing's envelope leaves escapes to each definition's own check,
	// so that the bad definition is named.
	if _, _, err := topMembers([]byte(`{"tools":[{"name":"\x"}]}`), "list"); err != nil {
		t.Errorf("envelope: %v", err)
	}
}

func TestParseServerInfo(t *testing.T) {
	tests := []struct {
		in   string
		want ServerInfo
		err  string
	}{
		{``, ServerInfo{}, ""},
		{`null`, ServerInfo{}, ""},
		{`{"name":"notes","version":"1.2.0","title":"Notes"}`, ServerInfo{"notes", "1.2.0"}, ""},
		{`{"name":null}`, ServerInfo{}, ""},
		{`{"name":"a","name":"b"}`, ServerInfo{}, `repeated member "name"`},
		{`{"name":"a","\u006eame":"b"}`, ServerInfo{}, `repeated member "name"`},
		{`{"name":7}`, ServerInfo{}, "serverInfo.name"},
		{`{"version":"\udc00"}`, ServerInfo{}, "lone low surrogate"},
		{`"notes"`, ServerInfo{}, "not a JSON object"},
	}
	for _, tc := range tests {
		got, err := ParseServerInfo([]byte(tc.in))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v, %v", tc.in, got, err)
		}
	}
}
