package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/web"
)

// addStrictTool adds a tool whose arguments core checks, not the SDK. The
// SDK's typed tools validate the arguments against the input schema before
// the handler runs, and a value past a bound (a 51-character header) then
// fails with the validator's words and no faxhub code. A tool that
// carries the send options advertises their bounds in its schema (t's
// InputSchema) and takes them as given: the arguments are decoded
// strictly here (an unknown member is refused by its path, coverPage.fax)
// and core checks every value, so the error is core's invalid_request
// naming the field, as at every other door. The output schema is inferred
// from Out as the SDK's AddTool does, and the result carries it as
// structured content and as text.
func addStrictTool[In, Out any](s *mcp.Server, t *mcp.Tool, fn mcp.ToolHandlerFor[In, Out]) {
	out, err := jsonschema.For[Out](nil)
	if err != nil {
		panic(fmt.Errorf("mcp: output schema of %s: %w", t.Name, err))
	}
	t.OutputSchema = out
	s.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in In
		if err := decodeArguments(t.Name, req.Params.Arguments, &in); err != nil {
			return errorResult(err), nil
		}
		_, o, err := fn(ctx, req, in)
		if err != nil {
			return errorResult(err), nil
		}
		b, err := json.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("mcp: encode the result of %s: %w", t.Name, err)
		}
		return &mcp.CallToolResult{StructuredContent: json.RawMessage(b), Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
	})
}

func errorResult(err error) *mcp.CallToolResult {
	var r mcp.CallToolResult
	r.SetError(err)
	return &r
}

// decodeArguments decodes a tool's arguments (absent: {}) strictly into v:
// a JSON object whose members are v's fields, at every depth, of the right
// types. Its errors are the tool's own text, with the field.
func decodeArguments(tool string, raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		raw = json.RawMessage("{}")
	}
	if p := web.UnknownMember(raw, v); p != "" {
		return fmt.Errorf("%s: %s has no argument %s (field: %s)", core.CodeInvalidRequest, tool, p, p)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok && te.Field != "" {
			return fmt.Errorf("%s: the argument %s must be %s, not %s (field: %s)", core.CodeInvalidRequest, te.Field, jsonKind(te.Type.Kind()), te.Value, te.Field)
		}
		return fmt.Errorf("%s: the arguments of %s are invalid: %v", core.CodeInvalidRequest, tool, err)
	}
	return nil
}

// jsonKind names a Go kind as JSON Schema does.
func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}
