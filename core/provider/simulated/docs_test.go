package simulated_test

import (
	"os"
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core/provider/simulated"
)

// The public page of test numbers must list every number the simulator
// knows, so users never rely on an undocumented or stale one.
func TestDocsListEveryTestNumber(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/test-numbers.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range simulated.TestNumbers() {
		if !strings.Contains(string(doc), "`"+n.Number+"`") {
			t.Errorf("docs/test-numbers.md does not list %s (%s)", n.Number, n.Outcome)
		}
	}
}
