package capability

import (
	"errors"
	"testing"
)

// FuzzParseOverrides: a caps.json is accepted only in its documented form,
// and what is accepted marshals back to an equal set of overrides.
func FuzzParseOverrides(f *testing.F) {
	f.Add([]byte(`{"tools":{"a":["write","read"],"b":["exec"]}}`))
	f.Add([]byte(`{"tools":{}}`))
	f.Add([]byte(`{"tools":{"a":["read","read"]}}`))
	f.Add([]byte(`{"tools":{"\u0061":["unknown"]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := ParseOverrides(data)
		if err != nil {
			if !errors.Is(err, ErrOverrides) {
				t.Fatalf("error %v does not wrap ErrOverrides", err)
			}
			return
		}
		for name, caps := range o {
			if name == "" || len(caps) == 0 {
				t.Fatalf("accepted %q: %v", name, caps)
			}
			for i, c := range caps {
				if !c.Valid() || (i > 0 && capRank(caps[i-1]) >= capRank(c)) {
					t.Fatalf("accepted %q: %v", name, caps)
				}
			}
		}
		out, err := o.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseOverrides(out)
		if err != nil || len(back) != len(o) {
			t.Fatalf("round trip: %v %v", back, err)
		}
	})
}
