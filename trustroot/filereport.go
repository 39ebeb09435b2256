package trustroot

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"time"

	"github.com/sigstore/sigstore-go/pkg/root"

	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// FileReport is what 'mcpsign trustroot show' reports of a trusted root
// file: its name, the SHA-256 of its bytes and what it trusts (Describe).
// Its JSON is the --format json document of docs/TRUSTROOT.md.
type FileReport struct {
	ReportVersion int    `json:"reportVersion"`
	File          string `json:"file"`
	SHA256        string `json:"sha256"`
	*Description
}

// DescribeFile is the FileReport of the trusted root tm read from file,
// whose bytes were data, at now.
func DescribeFile(file string, data []byte, tm root.TrustedMaterial, now time.Time) *FileReport {
	sum := sha256.Sum256(data)
	return &FileReport{ReportVersion: 1, File: file, SHA256: hex.EncodeToString(sum[:]), Description: Describe(tm, now)}
}

// WriteText writes the report for people: the file's name (escaped) and
// digest, then Description.WriteText.
func (r *FileReport) WriteText(w io.Writer) {
	fmt.Fprintf(w, "%s  sha256:%s\n", textsafe.Escape(r.File), r.SHA256)
	r.Description.WriteText(w)
}
