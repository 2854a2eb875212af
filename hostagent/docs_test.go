package hostagent_test

import (
	"net/http"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core/hosts"
	"github.com/faxhub/faxhub/hostagent"
)

// docs/hostagent.md's capability table, discovery and hosts.Capabilities()
// agree: the same capabilities in the same order, and every argument the
// docs name is an input property of discovery (and every property is in
// the docs).
func TestDocsDrift(t *testing.T) {
	e := newEnv(t)
	r := call(t, nil, http.MethodGet, e.api+hostagent.PathConfiguration, nil, nil)
	props := map[string][]string{}
	var discovered []hosts.Capability
	for _, c := range r.body["capabilities"].([]any) {
		m := c.(map[string]any)
		name := m["name"].(string)
		discovered = append(discovered, hosts.Capability(name))
		for p := range m["input"].(map[string]any)["properties"].(map[string]any) {
			props[name] = append(props[name], p)
		}
		sort.Strings(props[name])
	}
	doc, err := os.ReadFile("../docs/hostagent.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(doc), "\n## Capabilities\n")
	table, _, _ = strings.Cut(table, "\n### ")
	row := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| ([^|]*) \\|")
	arg := regexp.MustCompile("`([a-z_0-9]+)`")
	var documented []hosts.Capability
	for _, m := range row.FindAllStringSubmatch(table, -1) {
		documented = append(documented, hosts.Capability(m[1]))
		var args []string
		for _, a := range arg.FindAllStringSubmatch(m[2], -1) {
			if !slices.Contains(args, a[1]) && a[1] != "delegated" {
				args = append(args, a[1])
			}
		}
		sort.Strings(args)
		if !slices.Equal(args, props[m[1]]) {
			t.Errorf("%s: docs name arguments %v, discovery %v", m[1], args, props[m[1]])
		}
	}
	if !slices.Equal(documented, hosts.Capabilities()) || !slices.Equal(discovered, hosts.Capabilities()) {
		t.Fatalf("docs %v, discovery %v, core %v", documented, discovered, hosts.Capabilities())
	}
	for _, p := range hostagent.Paths() {
		if !strings.Contains(string(doc), p) {
			t.Errorf("docs/hostagent.md does not mention %s", p)
		}
	}
}
