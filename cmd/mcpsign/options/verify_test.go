package options

import (
	"strings"
	"testing"
)

func TestPackageRequirementsBound(t *testing.T) {
	o := VerifyOptions{PackageIntegrity: make([]string, MaxPackages+1)}
	if _, err := o.PackageRequirements(); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("err %v", err)
	}
}
