package a2a_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core"
)

// The skills of the card, of docs/a2a.md's table and their scopes agree.
func TestSkillsDrift(t *testing.T) {
	e := newEnv(t)
	_, body := getCard(t, e.base)
	var card struct {
		Skills []struct {
			ID                   string `json:"id"`
			SecurityRequirements []struct {
				Schemes map[string]struct {
					List []string `json:"list"`
				} `json:"schemes"`
			} `json:"securityRequirements"`
		} `json:"skills"`
	}
	if err := json.Unmarshal(body, &card); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../docs/a2a.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(doc), "\n## Skills\n")
	table, _, _ = strings.Cut(table, "\n\n`GetTask`")
	row := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| ([a-z:]+)")
	var docIDs, cardIDs []string
	docScopes := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(table, -1) {
		docIDs = append(docIDs, m[1])
		docScopes[m[1]] = m[2]
	}
	for _, s := range card.Skills {
		cardIDs = append(cardIDs, s.ID)
		scope := s.SecurityRequirements[0].Schemes["oauth"].List[0]
		if docScopes[s.ID] != scope {
			t.Errorf("%s: docs say scope %q, the card %q", s.ID, docScopes[s.ID], scope)
		}
		if !slices.Contains(core.FaxScopes(), core.Scope(scope)) {
			t.Errorf("%s: unknown scope %q", s.ID, scope)
		}
	}
	if len(docIDs) == 0 || !slices.Equal(docIDs, cardIDs) {
		t.Fatalf("docs/a2a.md skills %v, card skills %v", docIDs, cardIDs)
	}
}
