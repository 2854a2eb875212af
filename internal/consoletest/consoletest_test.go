package consoletest_test

import (
	"os/exec"
	"strings"
	"testing"
)

const self = "github.com/faxhub/faxhub/internal/consoletest"

// This package opens accounts and sessions at will and posts as their
// owner: it must stay test support. go list's Imports are a package's own,
// without its tests', so any hit is production code.
func TestNoProductionImports(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command on PATH to list the module's imports: %v", err)
	}
	out, err := exec.CommandContext(t.Context(), goTool, "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "github.com/faxhub/faxhub/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	listed := 0
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		listed++
		for _, imp := range fields[1:] {
			if imp == self {
				t.Errorf("%s imports %s, a test-support package", fields[0], self)
			}
		}
	}
	if listed < 10 {
		t.Fatalf("go list named %d packages: %s", listed, out)
	}
}
