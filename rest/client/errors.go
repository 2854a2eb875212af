package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
)

// Error is a request faxhub refused: the RFC 9457 problem it answered
// with. Code is the stable, machine-readable reason (the Problem schema's
// enum in /openapi.json); Detail says what to change.
type Error struct {
	Status    int    // HTTP status
	Code      string // e.g. insufficient_credits, invalid_destination
	Title     string
	Detail    string
	RequestID string
	// Body is the answer as received, for fields a program may want beyond
	// these (e.g. errors of a batch).
	Body []byte
}

func (e *Error) Error() string {
	msg := e.Detail
	if msg == "" {
		msg = e.Title
	}
	return fmt.Sprintf("faxhub: %s (%d): %s", e.Code, e.Status, msg)
}

// CodeOf returns the problem code of err when it is (or wraps) an *Error,
// else "".
func CodeOf(err error) string {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Code
	}
	return ""
}

// Check turns a response of the generated client into an error: nil for a
// 2xx, an *Error for a problem, and an *Error with code "http_<status>"
// for any other refusal (a proxy's HTML page, say).
func Check(res *http.Response, body []byte) error {
	if res == nil {
		return errors.New("faxhub: no response")
	}
	if res.StatusCode >= 200 && res.StatusCode < 300 {
		return nil
	}
	e := &Error{Status: res.StatusCode, Body: body, Title: http.StatusText(res.StatusCode)}
	mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	if mt == "application/problem+json" || mt == "application/json" {
		var p struct {
			Code      string `json:"code"`
			Title     string `json:"title"`
			Detail    string `json:"detail"`
			RequestID string `json:"requestId"`
		}
		if json.Unmarshal(body, &p) == nil && p.Code != "" {
			e.Code, e.Detail, e.RequestID = p.Code, p.Detail, p.RequestID
			if p.Title != "" {
				e.Title = p.Title
			}
			return e
		}
	}
	e.Code = fmt.Sprintf("http_%d", res.StatusCode)
	e.Detail = strings.TrimSpace(string(body[:min(len(body), 200)]))
	return e
}

// answer is the decoded success of a generated call, or its refusal as an
// *Error; op names the call in other errors.
func answer[T any](op string, res *http.Response, body []byte, ok *T) (*T, error) {
	if err := Check(res, body); err != nil {
		return nil, err
	}
	if ok == nil {
		return nil, fmt.Errorf("%s: unexpected answer %s", op, res.Status)
	}
	return ok, nil
}
