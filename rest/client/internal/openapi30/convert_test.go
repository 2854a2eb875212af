package openapi30

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestConvert(t *testing.T) {
	in := `{
  "openapi": "3.1.0",
  "webhooks": {"fax.delivered": {"post": {}}},
  "components": {
    "examples": {"e": {"value": {"a": 1}}},
    "schemas": {
      "A": {"type": "object", "unevaluatedProperties": false, "properties": {
        "t": {"type": ["string", "null"]},
        "k": {"type": "string", "const": "fax.delivered"},
        "x": {"type": "string", "examples": ["one", "two"]},
        "f": {"type": "string", "contentMediaType": "application/pdf"}
      }}
    }
  },
  "paths": {"/p": {"get": {"parameters": [
    {"in": "query", "name": "starting_after"},
    {"in": "query", "name": "startingAfter"},
    {"in": "path", "name": "id"},
    {"in": "query", "name": "limit"}
  ]}}}
}`
	out, err := Convert([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"openapi": "3.0.3",
		"components": map[string]any{
			"examples": map[string]any{"e": map[string]any{"value": map[string]any{"a": 1.0}}},
			"schemas": map[string]any{
				"A": map[string]any{"type": "object", "properties": map[string]any{
					"t": map[string]any{"type": "string", "nullable": true},
					"k": map[string]any{"type": "string", "enum": []any{"fax.delivered"}},
					"x": map[string]any{"type": "string", "example": "one"},
					"f": map[string]any{"type": "string", "format": "binary"},
				}},
			},
		},
		"paths": map[string]any{"/p": map[string]any{"get": map[string]any{"parameters": []any{
			map[string]any{"in": "query", "name": "starting_after"},
			map[string]any{"in": "path", "name": "id"},
			map[string]any{"in": "query", "name": "limit"},
		}}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Convert:\n got %s", out)
	}
}

func TestConvertRefuses(t *testing.T) {
	for _, in := range []string{`{"openapi": "3.0.3"}`, `[1]`, `{`} {
		if _, err := Convert([]byte(in)); err == nil || !strings.Contains(err.Error(), "openapi30") {
			t.Errorf("Convert(%s) = %v, want an openapi30 error", in, err)
		}
	}
}
