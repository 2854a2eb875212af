package a2a

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/errordetails"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/tasks"
	"github.com/faxhub/faxhub/core/web"
)

// rpcCodes are the JSON-RPC codes of the errors the transport answers
// itself (JSON-RPC 2.0 and A2A 1.0, numbered as a2a-go numbers them).
var rpcCodes = map[error]int{
	a2a.ErrParseError:           -32700,
	a2a.ErrInvalidRequest:       -32600,
	a2a.ErrInvalidParams:        -32602,
	a2a.ErrMethodNotFound:       -32601,
	a2a.ErrInternalError:        -32603,
	a2a.ErrUnsupportedOperation: -32004,
	a2a.ErrVersionNotSupported:  -32009,
	a2a.ErrUnauthenticated:      -31401,
}

const internalErrorMessage = "internal error: something went wrong on faxhub's side; try again in a moment"

// writeRPCError answers a request the transport refuses before a2a-go
// reads it, in the same shape a2a-go gives its errors: data is a list of
// typed details (our fields as a google.protobuf.Struct, then the
// google.rpc.ErrorInfo with the A2A reason).
func writeRPCError(w http.ResponseWriter, status int, id any, sentinel error, msg string, details map[string]any) {
	var data []map[string]any
	if len(details) > 0 {
		d := map[string]any{"@type": errordetails.StructType}
		for k, v := range details {
			d[k] = v
		}
		data = append(data, d)
	}
	data = append(data, map[string]any{"@type": errordetails.ErrorInfoType, "reason": a2a.ErrorReason(sentinel), "domain": a2a.ProtocolDomain,
		"metadata": map[string]string{"timestamp": time.Now().UTC().Format(time.RFC3339)}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": rpcCodes[sentinel], "message": msg, "data": data}})
}

// rpcID returns a request's id when it is a usable one (a number or a
// string), else nil (JSON-RPC answers null).
func rpcID(raw json.RawMessage) any {
	if len(raw) == 0 || (raw[0] != '"' && raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) || web.CheckJSONText(raw) != nil {
		return nil
	}
	return raw
}

// errorTarget says what a failed call was about, where that changes the
// A2A error: a missing task is TaskNotFound, a missing fax is bad params.
type errorTarget int

const (
	targetSkill errorTarget = iota
	targetTask
)

// toA2AError is the one mapping of core errors onto A2A errors. The data
// always carries faxhub's machine-readable code and the error's fields
// (required_scope, packs, …), so an agent can act on it; internal errors
// hide their text.
func toA2AError(err error, target errorTarget) *a2a.Error {
	e := core.AsError(err)
	var sentinel error
	switch e.Kind {
	case core.KindInvalid, core.KindUnprocessable, core.KindTooLarge, core.KindConflict, core.KindGone, core.KindPaymentRequired:
		sentinel = a2a.ErrInvalidParams
		if e.Code == tasks.CodeNotCancelable {
			sentinel = a2a.ErrTaskNotCancelable
		}
	case core.KindNotFound:
		sentinel = a2a.ErrInvalidParams
		if target == targetTask {
			sentinel = a2a.ErrTaskNotFound
		}
	case core.KindUnsupportedMedia:
		sentinel = a2a.ErrUnsupportedContentType
	case core.KindUnauthenticated:
		sentinel = a2a.ErrUnauthenticated
	case core.KindForbidden:
		// A missing scope is a permission; anything else forbidden (an
		// upload token of another owner) is an argument the agent must fix.
		sentinel = a2a.ErrInvalidParams
		if e.Code == core.CodeInsufficientScope {
			sentinel = a2a.ErrUnauthorized
		}
	case core.KindUnavailable:
		sentinel = a2a.ErrUnsupportedOperation
	case core.KindRateLimited:
		sentinel = a2a.ErrServerError
	default:
		return a2a.NewError(a2a.ErrInternalError, internalErrorMessage).
			WithDetails(map[string]any{"code": core.CodeInternal})
	}
	details := map[string]any{"code": e.Code}
	for k, v := range e.Fields {
		details[k] = v
	}
	if e.RetryAfterSeconds > 0 {
		details["retryAfterSeconds"] = e.RetryAfterSeconds
	}
	msg := e.Code + ": " + e.Message
	if s, ok := e.Fields["required_scope"].(string); ok && e.Code == core.CodeInsufficientScope {
		msg += "; the owner must authorize this agent again with the " + s + " scope"
	}
	return a2a.NewError(sentinel, msg).WithDetails(details)
}

// invalidParams is a refusal of the message itself (no task is created).
func invalidParams(msg string, details map[string]any) *a2a.Error {
	if details == nil {
		details = map[string]any{}
	}
	if _, ok := details["code"]; !ok {
		details["code"] = core.CodeInvalidRequest
	}
	return a2a.NewError(a2a.ErrInvalidParams, msg).WithDetails(details)
}
