package core

import (
	"slices"
	"testing"
)

func TestGrantScopes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		token, grant []string
		want         []Scope
	}{
		{"both allow", []string{"fax:read", "fax:send"}, []string{"fax:send", "fax:read"}, []Scope{ScopeFaxRead, ScopeFaxSend}},
		{"grant narrowed after the token", []string{"fax:read", "fax:send", "credits:read"}, []string{"fax:read"}, []Scope{ScopeFaxRead}},
		{"token narrower than the grant", []string{"inbox:read"}, []string{"inbox:read", "fax:read"}, []Scope{ScopeInboxRead}},
		{"openid scopes carry no permission", []string{"openid", "profile", "email", "offline_access", "credits:checkout"}, []string{"openid", "credits:checkout"}, []Scope{ScopeCreditsCheckout}},
		{"unknown names are dropped", []string{"fax:admin", "fax:read"}, []string{"fax:admin", "fax:read"}, []Scope{ScopeFaxRead}},
		{"documentation order, no duplicates", []string{"credits:checkout", "fax:read", "fax:read"}, []string{"fax:read", "credits:checkout", "credits:checkout"}, []Scope{ScopeFaxRead, ScopeCreditsCheckout}},
		{"revoked to nothing", []string{"fax:read"}, nil, nil},
		{"no token scopes", nil, []string{"fax:read"}, nil},
	} {
		if got := GrantScopes(tc.token, tc.grant); !slices.Equal(got, tc.want) {
			t.Errorf("%s: GrantScopes(%v, %v) = %v, want %v", tc.name, tc.token, tc.grant, got, tc.want)
		}
	}
}

func TestNarrowScopes(t *testing.T) {
	t.Parallel()
	widen := func(s string) *Error {
		return Errorf(KindForbidden, "test_widen", "%s was not asked for", s).With("scope", s)
	}
	asked := []string{"openid", "fax:read", "fax:send", "credits:read"}
	for _, tc := range []struct {
		name           string
		requested      []string
		chosen         []string
		want           []string
		wantWidenScope string
	}{
		{"nil approves what was asked", asked, nil, asked, ""},
		{"nil dedupes the request", []string{"fax:read", "fax:read"}, nil, []string{"fax:read"}, ""},
		{"the same", asked, asked, asked, ""},
		{"narrowed, requested order kept", asked, []string{"credits:read", "fax:read"}, []string{"fax:read", "credits:read"}, ""},
		{"duplicates collapse", asked, []string{"fax:send", "fax:send"}, []string{"fax:send"}, ""},
		{"empty is the caller's to refuse", asked, []string{}, nil, ""},
		{"widening is refused", asked, []string{"fax:read", "inbox:read"}, nil, "inbox:read"},
		{"an unknown scope widens too", asked, []string{"fax:admin"}, nil, "fax:admin"},
		{"nothing asked, anything chosen widens", nil, []string{"fax:read"}, nil, "fax:read"},
	} {
		got, err := NarrowScopes(tc.requested, tc.chosen, widen)
		if tc.wantWidenScope != "" {
			e := AsError(err)
			if err == nil || e.Code != "test_widen" || e.Kind != KindForbidden || e.Fields["scope"] != tc.wantWidenScope || got != nil {
				t.Errorf("%s: NarrowScopes = %v, %v; want the widen refusal for %s", tc.name, got, err, tc.wantWidenScope)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: NarrowScopes(%v, %v) = %v, %v; want %v", tc.name, tc.requested, tc.chosen, got, err, tc.want)
		}
	}
}

// NarrowScopes takes any string type: delegated capabilities are one.
func TestNarrowScopesTyped(t *testing.T) {
	t.Parallel()
	type capability string
	got, err := NarrowScopes([]capability{"a", "b", "c"}, []capability{"c", "a"}, func(c capability) *Error {
		return Errorf(KindForbidden, "test_widen", "%s", c)
	})
	if err != nil || !slices.Equal(got, []capability{"a", "c"}) {
		t.Fatalf("typed narrowing = %v, %v", got, err)
	}
}

func TestKeptScopes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name              string
		requested, chosen []string
		want              []string
	}{
		{"intersection in requested order", []string{"a", "b", "c"}, []string{"c", "a"}, []string{"a", "c"}},
		{"a wider decision only narrows", []string{"a", "b"}, []string{"a", "z"}, []string{"a"}},
		{"nothing chosen keeps nothing", []string{"a"}, []string{}, nil},
		{"duplicates collapse", []string{"a", "a"}, []string{"a"}, []string{"a"}},
	} {
		if got := KeptScopes(tc.requested, tc.chosen); !slices.Equal(got, tc.want) {
			t.Errorf("%s: KeptScopes(%v, %v) = %v, want %v", tc.name, tc.requested, tc.chosen, got, tc.want)
		}
	}
}
