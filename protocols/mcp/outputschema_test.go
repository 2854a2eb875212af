package mcp_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// outputCheck validates every tool result a test client receives against
// the outputSchema tools/list declares for the tool: each test of the
// package that calls a tool (every tool, on success and on error) checks
// that structuredContent matches the schema hosts and models are told.
type outputCheck struct {
	t       *testing.T
	mu      sync.Mutex
	schemas map[string]*jsonschema.Resolved
}

// load reads the declared output schemas once the session is connected.
// A session whose token cannot list tools (the tests of refusals) calls
// no tool successfully either: nothing to check.
func (c *outputCheck) load(cs *mcp.ClientSession) {
	c.t.Helper()
	res, err := cs.ListTools(c.t.Context(), nil)
	if err != nil {
		return
	}
	schemas := map[string]*jsonschema.Resolved{}
	for _, tl := range res.Tools {
		if tl.OutputSchema == nil {
			continue
		}
		raw, _ := json.Marshal(tl.OutputSchema)
		var s jsonschema.Schema
		if err := json.Unmarshal(raw, &s); err != nil {
			c.t.Fatalf("%s: output schema: %v", tl.Name, err)
		}
		r, err := s.Resolve(nil)
		if err != nil {
			c.t.Fatalf("%s: resolve the output schema: %v", tl.Name, err)
		}
		schemas[tl.Name] = r
	}
	c.mu.Lock()
	c.schemas = schemas
	c.mu.Unlock()
}

func (c *outputCheck) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil || method != "tools/call" {
			return res, err
		}
		r, ok := res.(*mcp.CallToolResult)
		if !ok || r.IsError {
			return res, err
		}
		var name string
		switch p := req.GetParams().(type) {
		case *mcp.CallToolParams:
			name = p.Name
		case *mcp.CallToolParamsRaw:
			name = p.Name
		}
		c.mu.Lock()
		s, loaded := c.schemas[name], c.schemas != nil
		c.mu.Unlock()
		switch {
		case !loaded:
		case s == nil:
			c.t.Errorf("%s declares no output schema", name)
		case r.StructuredContent == nil:
			c.t.Errorf("%s: no structuredContent", name)
		default:
			raw, _ := json.Marshal(r.StructuredContent)
			var v any
			_ = json.Unmarshal(raw, &v)
			if verr := s.Validate(v); verr != nil {
				c.t.Errorf("%s: the result does not match its output schema: %v\n%s", name, verr, raw)
			}
		}
		return res, err
	}
}
