package telnyx

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// docs/providers.md's table of Telnyx failure reasons must say what
// FailureCode does, for every reason FailureCode knows by name.
func TestDocsFailureTable(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/providers.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "### Telnyx failure reasons")
	if !ok {
		t.Fatal("docs/providers.md has no Telnyx failure reasons section")
	}
	section, _, _ = strings.Cut(section, "\n#")
	name := regexp.MustCompile("`([a-z0-9_]+)`")
	documented := map[string]string{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 4 || strings.Contains(cells[1], "failure_reason") {
			continue
		}
		code := name.FindStringSubmatch(cells[2])
		if code == nil {
			continue
		}
		for _, m := range name.FindAllStringSubmatch(cells[1], -1) {
			documented[m[1]] = code[1]
			if got, _ := FailureCode(m[1]); got != code[1] {
				t.Errorf("docs map %s to %s, FailureCode to %s", m[1], code[1], got)
			}
		}
	}
	for reason := range failureCodes {
		if _, ok := documented[reason]; !ok {
			t.Errorf("docs/providers.md does not list %s", reason)
		}
	}
}
