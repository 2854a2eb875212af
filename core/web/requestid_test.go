package web

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core"
)

func TestRequestID(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(RequestIDLogs(slog.NewJSONHandler(&buf, nil))).With("component", "test")
	h := WithRequestID(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.InfoContext(r.Context(), "handled")
		WriteError(w, r, nil, core.Errorf(core.KindNotFound, core.CodeNotFound, "no such thing"))
	}))
	for _, tc := range []struct {
		name, sent string
		kept       bool
	}{
		{"none: ours", "", false},
		{"a plain token is kept", "trace-1.a_B", true},
		{"too long", strings.Repeat("a", 65), false},
		{"spaces", "a b", false},
		{"a header injection try", "a\r\nX-Evil: 1", false},
		{"not ASCII", "é", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			buf.Reset()
			req := httptest.NewRequest(http.MethodGet, "/x", nil)
			if tc.sent != "" {
				req.Header[HeaderRequestID] = []string{tc.sent}
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			id := rec.Header().Get(HeaderRequestID)
			if tc.kept && id != tc.sent || !tc.kept && !strings.HasPrefix(id, "req_") {
				t.Fatalf("request id %q (sent %q)", id, tc.sent)
			}
			var body map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body["requestId"] != id || body["code"] != core.CodeNotFound {
				t.Fatalf("problem %s (%v)", rec.Body, err)
			}
			var line map[string]any
			if err := json.Unmarshal(buf.Bytes(), &line); err != nil || line["request_id"] != id || line["component"] != "test" {
				t.Fatalf("log line %s (%v)", buf.String(), err)
			}
		})
	}
	// Outside a request nothing is added.
	buf.Reset()
	log.Info("no request")
	if strings.Contains(buf.String(), "request_id") {
		t.Fatalf("log line outside a request: %s", buf.String())
	}
}
