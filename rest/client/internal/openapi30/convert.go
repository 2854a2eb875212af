// Package openapi30 rewrites faxhub's OpenAPI 3.1 document into the OpenAPI
// 3.0 dialect oapi-codegen reads best, for generating the Go client
// (rest/client/api). It changes only what 3.0 cannot say or what the
// generator mistranslates; the server keeps serving 3.1.
//
// The rewrites:
//   - "openapi" becomes 3.0.3 and the top-level "webhooks" map (3.1 only) is
//     dropped: the client never receives webhooks; their payload schemas stay
//     in components (the generator is told not to prune them).
//   - type ["T", "null"] becomes type T with nullable: true.
//   - const c becomes enum [c], so the generator emits a typed constant.
//   - a schema's "examples" list becomes its first "example".
//   - contentMediaType (raw bytes of a media type) becomes format: binary.
//   - unevaluatedProperties is dropped (3.0 has no such keyword; the server
//     still enforces it).
//   - of query parameters whose Go names collide (a snake_case name and its
//     camelCase alias, e.g. starting_after and startingAfter), only the first
//     is kept: both mean the same to the server, and two fields of one name
//     do not compile.
package openapi30

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Convert returns doc (an OpenAPI 3.1 JSON document) in the 3.0 dialect,
// indented for a readable diff.
func Convert(doc []byte) ([]byte, error) {
	var root map[string]any
	if err := json.Unmarshal(doc, &root); err != nil {
		return nil, fmt.Errorf("openapi30: decode document: %w", err)
	}
	v, _ := root["openapi"].(string)
	if !strings.HasPrefix(v, "3.1") {
		return nil, fmt.Errorf("openapi30: the document is OpenAPI %q, not 3.1", v)
	}
	root["openapi"] = "3.0.3"
	delete(root, "webhooks")
	rewrite(root)
	if paths, ok := root["paths"].(map[string]any); ok {
		for _, item := range paths {
			ops, _ := item.(map[string]any)
			for _, op := range ops {
				if o, ok := op.(map[string]any); ok {
					dedupeParams(o)
				}
			}
		}
	}
	out, err := json.MarshalIndent(root, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("openapi30: encode document: %w", err)
	}
	return append(out, '\n'), nil
}

// rewrite walks every object of the document and rewrites the schema
// keywords 3.0 lacks. The keywords are only ever schema keywords in
// faxhub's document, so no path bookkeeping is needed, except for
// "examples", which is also the name of a media type's and a parameter's
// map of named examples (an object, left alone) and of components.examples.
func rewrite(v any) {
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			rewrite(e)
		}
	case map[string]any:
		if types, ok := x["type"].([]any); ok {
			var kept []any
			for _, t := range types {
				if t == "null" {
					x["nullable"] = true
					continue
				}
				kept = append(kept, t)
			}
			if len(kept) == 1 {
				x["type"] = kept[0]
			} else {
				x["type"] = kept
			}
		}
		if c, ok := x["const"]; ok {
			x["enum"] = []any{c}
			delete(x, "const")
		}
		if ex, ok := x["examples"].([]any); ok {
			if len(ex) > 0 {
				x["example"] = ex[0]
			}
			delete(x, "examples")
		}
		if _, ok := x["contentMediaType"]; ok {
			x["format"] = "binary"
			delete(x, "contentMediaType")
		}
		delete(x, "unevaluatedProperties")
		for _, e := range x {
			rewrite(e)
		}
	}
}

// dedupeParams keeps the first of the query parameters of op whose names
// differ only in case and underscores.
func dedupeParams(op map[string]any) {
	params, ok := op["parameters"].([]any)
	if !ok {
		return
	}
	seen := map[string]bool{}
	kept := params[:0]
	for _, p := range params {
		m, _ := p.(map[string]any)
		name, _ := m["name"].(string)
		in, _ := m["in"].(string)
		key := in + ":" + strings.ToLower(strings.ReplaceAll(name, "_", ""))
		if in == "query" && seen[key] {
			continue
		}
		seen[key] = true
		kept = append(kept, p)
	}
	op["parameters"] = kept
}
