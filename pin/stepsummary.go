package pin

import (
	"bytes"
	"fmt"
	"os"
)

// MaxStepSummaryBytes is what AppendStepSummary appends at most: GitHub
// refuses a job summary over 1 MiB.
const MaxStepSummaryBytes = 1000 << 10

// AppendStepSummary appends rep as Markdown (WriteReportMarkdown) to the
// GitHub Actions job summary file at path ($GITHUB_STEP_SUMMARY), cut at
// MaxStepSummaryBytes; nothing when path is "".
func AppendStepSummary(path string, rep *Report, failOn FailOn) error {
	if path == "" {
		return nil
	}
	var b bytes.Buffer
	if err := WriteReportMarkdown(&b, rep, failOn); err != nil {
		return err
	}
	data := b.Bytes()
	if len(data) > MaxStepSummaryBytes {
		data = append(bytes.Clone(data[:MaxStepSummaryBytes]), "\n\n… (report truncated: run verify-pin locally for the whole diff)\n"...)
		data = bytes.ToValidUTF8(data, nil)
	}
	data = append(data, '\n')
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("GITHUB_STEP_SUMMARY: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("GITHUB_STEP_SUMMARY: %w", err)
	}
	return f.Close()
}
