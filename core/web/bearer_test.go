package web_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/web"
)

type fakeVerifier struct{}

func (fakeVerifier) VerifyAccessToken(_ context.Context, token, audience string) (core.Principal, error) {
	switch {
	case token == "broken":
		return core.Principal{}, errors.New("database down")
	case token == "good" && audience == "https://x/mcp":
		return core.Principal{OwnerID: "own_1"}, nil
	}
	return core.Principal{}, core.Errorf(core.KindUnauthenticated, core.CodeInvalidToken, "the access token is not valid")
}

func TestAuthenticateBearer(t *testing.T) {
	res := web.BearerResource{Name: "the MCP server", URL: "https://x/mcp", Hint: "get one", APIKeyHint: "use OAuth"}
	for _, tc := range []struct {
		name     string
		headers  http.Header
		status   int
		code     string
		desc     string
		internal bool
	}{
		{"good token", http.Header{"Authorization": {"Bearer good"}}, 0, "", "", false},
		{"scheme is case-insensitive", http.Header{"Authorization": {"bearer good"}}, 0, "", "", false},
		{"no header", nil, 401, "", "access token is required: get one", false},
		{"empty bearer", http.Header{"Authorization": {"Bearer "}}, 401, "", "access token is required", false},
		{"two headers", http.Header{"Authorization": {"Bearer good", "Bearer good"}}, 400, "invalid_request", "exactly one Authorization", false},
		{"basic scheme", http.Header{"Authorization": {"Basic Zm9vOmJhcg=="}}, 401, "invalid_token", "unsupported authorization scheme Basic", false},
		{"DPoP scheme", http.Header{"Authorization": {"DPoP good"}}, 401, "invalid_token", "DPoP-bound", false},
		{"DPoP proof beside a bearer token", http.Header{"Authorization": {"Bearer good"}, "Dpop": {"eyJ.x.y"}}, 401, "invalid_token", "DPoP-bound", false},
		{"unknown token", http.Header{"Authorization": {"Bearer nope"}}, 401, "invalid_token", "not valid", false},
		{"an API key", http.Header{"Authorization": {"Bearer " + core.SecretAPIKey + "test_abc"}}, 401, "invalid_token", "API keys are not accepted by the MCP server; use OAuth", false},
		{"verifier failure", http.Header{"Authorization": {"Bearer broken"}}, 503, core.CodeInternal, "could not be checked", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			for k, v := range tc.headers {
				r.Header[k] = v
			}
			p, ref := web.AuthenticateBearer(r, fakeVerifier{}, res)
			if tc.status == 0 {
				if ref != nil || p.OwnerID != "own_1" {
					t.Fatalf("refused a good token: %+v", ref)
				}
				return
			}
			if ref == nil {
				t.Fatal("accepted")
			}
			if ref.Status != tc.status || ref.Error != tc.code || !strings.Contains(ref.Description, tc.desc) || (ref.Err != nil) != tc.internal {
				t.Fatalf("got %+v, want %d %q %q internal=%v", ref, tc.status, tc.code, tc.desc, tc.internal)
			}
			if tc.internal && strings.Contains(ref.Description, "database") {
				t.Fatal("an internal error reached the client")
			}
		})
	}
}
