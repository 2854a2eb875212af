package rest

import (
	"net/http"
	"testing"
)

// The upload URL is usable from a page of any origin (the MCP App's
// sandboxed frame): the preflight answers 204 and every PUT answer, a
// refusal included, carries Access-Control-Allow-Origin so the page can
// read the error.
func TestUploadCORS(t *testing.T) {
	a := newUnitAPI(t, false)
	pre := a.do(t, req{method: "OPTIONS", path: "/api/v1/uploads/u1.a.b", header: map[string]string{
		"Origin": "null", "Access-Control-Request-Method": "PUT", "Access-Control-Request-Headers": "content-type"}})
	if pre.Code != http.StatusNoContent {
		t.Fatalf("preflight: %d %s", pre.Code, pre.Body)
	}
	want := map[string]string{"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Methods": "PUT", "Access-Control-Allow-Headers": "Content-Type"}
	for k, v := range want {
		if got := pre.Header().Get(k); got != v {
			t.Errorf("preflight %s = %q, want %q", k, got, v)
		}
	}
	put := a.do(t, req{method: "PUT", path: "/api/v1/uploads/u1.a.b", body: "%PDF-1.4", header: map[string]string{"Origin": "null"}})
	if put.Code < 400 || put.Header().Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("PUT with a bad token: %d, Access-Control-Allow-Origin %q; want an error readable from any origin", put.Code, put.Header().Get("Access-Control-Allow-Origin"))
	}
	if got := put.Header().Get("Access-Control-Allow-Credentials"); got != "" {
		t.Errorf("Access-Control-Allow-Credentials = %q; the capability needs no credentials", got)
	}
}
