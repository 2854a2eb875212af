package hostagent

import (
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/hosts"
)

// The table has exactly core's capabilities, in core's order, and each
// argument struct's JSON names are exactly its input schema's properties.
func TestCapabilityTable(t *testing.T) {
	caps := capabilityTable([]core.CreditPack{{ID: "small", Price: "10.00", Credit: "10.00"}})
	var names []hosts.Capability
	for _, c := range caps {
		names = append(names, c.Name)
		if _, ok := hosts.CapabilityOperation(c.Name); !ok {
			t.Errorf("%s: core has no operation for it", c.Name)
		}
		props, _ := c.Input["properties"].(map[string]any)
		var schema []string
		for k := range props {
			schema = append(schema, k)
		}
		sort.Strings(schema)
		var fields []string
		st := reflect.TypeOf(c.newArgs()).Elem()
		for i := range st.NumField() {
			name, _, _ := strings.Cut(st.Field(i).Tag.Get("json"), ",")
			fields = append(fields, name)
		}
		sort.Strings(fields)
		if !slices.Equal(schema, fields) {
			t.Errorf("%s: schema properties %v, argument struct %v", c.Name, schema, fields)
		}
		if req, ok := c.Input["required"].([]string); ok {
			for _, r := range req {
				if !slices.Contains(schema, r) {
					t.Errorf("%s: required %q is not a property", c.Name, r)
				}
			}
		}
	}
	if !slices.Equal(names, hosts.Capabilities()) {
		t.Fatalf("table %v, hosts.Capabilities() %v", names, hosts.Capabilities())
	}
}

// Every core delegated error code maps to a protocol status that is not
// 500, and the named ones to the protocol's statuses.
func TestProtocolError(t *testing.T) {
	rows := []struct {
		err    error
		status int
		code   string
	}{
		{core.Errorf(core.KindUnauthenticated, hosts.CodeInvalidJWT, "x"), 401, "invalid_jwt"},
		{core.Errorf(core.KindUnauthenticated, hosts.CodeJWTReplayed, "x"), 401, "invalid_jwt"},
		{core.Errorf(core.KindForbidden, hosts.CodeAgentPending, "x"), 403, "agent_pending"},
		{core.Errorf(core.KindConflict, hosts.CodeAgentRevoked, "x"), 403, "agent_revoked"},
		{core.Errorf(core.KindForbidden, hosts.CodeAgentRejected, "x"), 403, "agent_rejected"},
		{core.Errorf(core.KindForbidden, hosts.CodeAgentExpired, "x"), 403, "agent_expired"},
		{core.Errorf(core.KindForbidden, hosts.CodeHostRevoked, "x"), 403, "host_revoked"},
		{core.Errorf(core.KindForbidden, hosts.CodeCapabilityNotGranted, "x"), 403, "capability_not_granted"},
		{core.Errorf(core.KindForbidden, core.CodeInsufficientScope, "x"), 403, "capability_not_granted"},
		{core.Errorf(core.KindNotFound, hosts.CodeAgentNotFound, "x"), 404, "agent_not_found"},
		{core.Errorf(core.KindConflict, hosts.CodeAgentExists, "x"), 409, "agent_exists"},
		{core.Errorf(core.KindInvalid, hosts.CodeUnknownCapability, "x"), 400, "invalid_capabilities"},
		{core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "x"), 400, "invalid_request"},
		{&core.Error{Kind: core.KindRateLimited, Code: "too_many", Message: "x", RetryAfterSeconds: 3}, 429, "rate_limited"},
		{core.Errorf(core.KindPaymentRequired, credits.CodeInsufficientCredits, "x"), 402, "insufficient_credits"},
		{core.Errorf(core.KindInternal, core.CodeInternal, "secret detail"), 500, "internal_error"},
	}
	for _, r := range rows {
		status, code, msg, _ := protocolError(r.err)
		if status != r.status || code != r.code {
			t.Errorf("%v: got %d %s, want %d %s", r.err, status, code, r.status, r.code)
		}
		if strings.Contains(msg, "secret") {
			t.Errorf("internal text leaked: %q", msg)
		}
	}
}
