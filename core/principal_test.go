package core

import "testing"

func TestAuthorizeOperations(t *testing.T) {
	t.Parallel()
	draft := []Scope{ScopeFaxDraft, ScopeCreditsRead}
	for _, tc := range []struct {
		name string
		p    Principal
		op   Operation
		code string
	}{
		{"no owner", Principal{Scopes: draft}, OpQuote, CodeUnauthenticated},
		{"scope allows, no operation list", Principal{OwnerID: "own_1", Scopes: draft}, OpCreateUpload, ""},
		{"scope missing", Principal{OwnerID: "own_1", Scopes: draft}, OpSendFax, CodeInsufficientScope},
		{"listed operation", Principal{OwnerID: "own_1", Scopes: draft, Operations: []Operation{OpQuote}}, OpQuote, ""},
		{"scope allows, operation not listed", Principal{OwnerID: "own_1", Scopes: draft, Operations: []Operation{OpQuote}}, OpCreateUpload, CodeInsufficientScope},
		{"empty list allows nothing", Principal{OwnerID: "own_1", Scopes: draft, Operations: []Operation{}}, OpGetCredits, CodeInsufficientScope},
		{"listed, scope missing", Principal{OwnerID: "own_1", Scopes: draft, Operations: []Operation{OpSendFax}}, OpSendFax, CodeInsufficientScope},
		{"unknown operation", Principal{OwnerID: "own_1", Scopes: FaxScopes()}, Operation("fly"), CodeInsufficientScope},
	} {
		err := Authorize(tc.p, tc.op)
		if got := ErrorCode(err); (tc.code == "" && err != nil) || (tc.code != "" && got != tc.code) {
			t.Errorf("%s: Authorize = %v, want code %q", tc.name, err, tc.code)
		}
		if tc.code == CodeInsufficientScope && ErrorKind(err) != KindForbidden {
			t.Errorf("%s: kind %v, want forbidden", tc.name, ErrorKind(err))
		}
	}
}
