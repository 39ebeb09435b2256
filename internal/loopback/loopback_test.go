package loopback

import "testing"

func TestIsHost(t *testing.T) {
	for _, tt := range []struct {
		host string
		want bool
	}{
		{"localhost", true}, {"LocalHost", true}, {"127.0.0.1", true}, {"127.1.2.3", true},
		{"::1", true}, {"::ffff:127.0.0.1", true},
		{"localhost.", false}, {"localhost.example", false}, {"0.0.0.0", false}, {"", false},
		{"10.0.0.1", false}, {"[::1]", false}, {"::", false}, {"example.com", false},
	} {
		if got := IsHost(tt.host); got != tt.want {
			t.Errorf("IsHost(%q) = %v, want %v", tt.host, got, tt.want)
		}
	}
}
