package app

import (
	"log/slog"
	"net/http"
	"strings"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/web"
	"github.com/faxhub/faxhub/hostagent"
	a2aserver "github.com/faxhub/faxhub/protocols/a2a"
	mcpserver "github.com/faxhub/faxhub/protocols/mcp"
)

// refuseInvalidText answers a request whose text cannot be stored (invalid
// UTF-8, NUL: web.RefuseInvalidText) in its protocol's error shape: MCP
// (and A2A) get JSON-RPC invalid params, the delegated host/agent endpoints
// the Agent Auth {error, message}, the authorization server and the agent
// endpoints an OAuth invalid_request, everything else problem+json.
func refuseInvalidText(log *slog.Logger) web.Refuser {
	return func(w http.ResponseWriter, r *http.Request, body []byte, err error) {
		msg := core.AsError(err).Message
		switch p := r.URL.Path; {
		case p == mcpserver.Path || p == a2aserver.Path:
			web.WriteJSONRPCInvalidParams(w, body, msg)
		case hostagent.IsPath(p):
			hostagent.WriteInvalidRequest(w, msg)
		case strings.HasPrefix(p, "/api/auth/") || strings.HasPrefix(p, "/.well-known/"):
			web.WriteOAuthError(w, http.StatusBadRequest, core.CodeInvalidRequest, msg)
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
