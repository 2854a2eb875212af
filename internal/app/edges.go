package app

import (
	"log/slog"
	"net/http"
	"strings"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/web"
	"github.com/faxhub/faxhub/hostagent"
	"github.com/faxhub/faxhub/oauth"
	a2aserver "github.com/faxhub/faxhub/protocols/a2a"
	mcpserver "github.com/faxhub/faxhub/protocols/mcp"
)

// refuseInvalidText answers a request whose text cannot be stored (invalid
// UTF-8, NUL, an unpaired surrogate escape: web.RefuseInvalidText), or
// whose body did not arrive in time (408), in its protocol's error shape:
// MCP and A2A get a JSON-RPC error (-32602 invalid params; -32600 for the
// timeout), the delegated host/agent endpoints the Agent Auth {error,
// message}, dynamic client registration RFC 7591's
// invalid_client_metadata, the rest of the authorization server and the
// agent endpoints an OAuth invalid_request, everything else problem+json.
func refuseInvalidText(log *slog.Logger) web.Refuser {
	return func(w http.ResponseWriter, r *http.Request, body []byte, err error) {
		e := core.AsError(err)
		status := web.Status(e.Kind)
		switch p := r.URL.Path; {
		case p == mcpserver.Path || p == a2aserver.Path:
			web.WriteJSONRPCRefusal(w, body, err)
		case hostagent.IsPath(p):
			hostagent.WriteRefusal(w, err)
		case p == oauth.PathRegister && e.Kind == core.KindInvalid:
			web.WriteOAuthError(w, status, "invalid_client_metadata", e.Message)
		case strings.HasPrefix(p, "/api/auth/") || strings.HasPrefix(p, "/.well-known/"):
			web.WriteOAuthError(w, status, core.CodeInvalidRequest, e.Message)
		default:
			web.WriteError(w, r, log, err)
		}
	}
}

// isUpload reports the upload PUT, the one request whose body is a file
// streamed at the client's pace (rest's PUT /api/v1/uploads/{token}).
func isUpload(r *http.Request) bool {
	return r.Method == http.MethodPut && strings.HasPrefix(r.URL.Path, "/api/v1/uploads/")
}

// isStreamedBody reports the requests whose bodies carry a whole document
// and so arrive at the client's pace (web.BodyDeadlines' stream rate, not
// the 30 s of a small JSON body): the upload PUT, the machine endpoints'
// JSON with a base64 PDF of up to ~13 MiB, and the test inbox's simulated
// fax (a multipart upload).
func isStreamedBody(r *http.Request) bool {
	return isUpload(r) || (r.Method == http.MethodPost &&
		(strings.HasPrefix(r.URL.Path, "/api/v1/machine/faxes") || r.URL.Path == "/api/v1/inbox/simulate"))
}
