package rest

import (
	"fmt"
	"maps"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/services"
)

// The fax options (cover page fields, header line, resolution, schedule,
// retry policy) as sendFax, the previews and the fax itself show them, and
// the operations of a fax's pages and proof of delivery (docs/api.md,
// docs/fax-document.md, docs/receipts.md).

func faxProofCodes() map[string]string {
	return map[string]string{
		faxes.CodeUndrawableCharacter:   `coverPage.subject holds "漢" (U+6F22), a character the fax font cannot draw`,
		faxes.CodeNotYetFaxed:           "this fax is queued and has not been faxed yet; POST /api/v1/previews shows its pages as they will be faxed",
		faxes.CodeFaxNotFinished:        "this fax is sending; its report is made when it finishes",
		faxes.CodeFileLink:              "this file link is for a preview that expired",
		faxes.CodeReceiptsUnavailable:   "this server signs no delivery receipts",
		faxes.CodePageImagesUnavailable: "page images are not available on this server (its page renderer is not installed); download the PDF instead",
		faxes.CodePageOutOfRange:        "the document has 3 pages",
	}
}

// faxOptionProps are the options a send takes and a fax shows: core's
// schema of them, the one every door publishes.
func faxOptionProps() obj { return obj(faxes.OptionsSchema(false)) }

func faxProofSchemas() obj {
	str := func(desc string) obj { return obj{"type": "string", "description": desc} }
	dateTime := obj{"type": "string", "format": "date-time"}
	files := obj{"type": "object", "required": []string{"url", "pages", "pageImages", "sha256", "expiresAt"}, "properties": obj{
		"url":        obj{"type": "string", "format": "uri", "description": "the PDF (signed link)"},
		"pages":      obj{"type": "integer", "description": "pages, the cover page included"},
		"pageImages": obj{"type": "array", "items": obj{"type": "string", "format": "uri"}, "description": fmt.Sprintf("each page as a fax machine prints it: black and white at the fax's resolution, a PNG %d pixels wide (signed links)", faxes.PageImageWidth)},
		"sha256":     str("hex SHA-256 of the PDF"),
		"expiresAt":  dateTime,
	}}
	return obj{
		"FaxFiles": files,
		"Preview": obj{"type": "object", "required": []string{"id", "mode", "documentId", "resolution", "createdAt", "files"}, "properties": obj{
			"id": str("prv_…"), "mode": obj{"type": "string", "enum": []string{"live", "test"}}, "documentId": str("the document previewed"),
			"resolution": obj{"type": "string", "enum": []string{string(faxes.ResolutionStandard), string(faxes.ResolutionFine)}},
			"createdAt":  dateTime, "files": ref("FaxFiles"),
			"quote": obj{"$ref": "#/components/schemas/Quote", "description": "the price, when the preview names a destination (to)"},
		}},
		"ReportLink": obj{"type": "object", "required": []string{"url", "expiresAt"}, "properties": obj{
			"url": obj{"type": "string", "format": "uri"}, "expiresAt": dateTime,
		}},
		"SignedReceipt": obj{"type": "object", "required": []string{"receipt", "jwksUri"}, "properties": obj{
			"receipt": str("compact JWS (EdDSA, typ fax-receipt+jwt) over the fax's id, destination, pages, the SHA-256 of the document as faxed, outcome, times and provider reference (docs/receipts.md)"),
			"jwksUri": obj{"type": "string", "format": "uri", "description": "faxhub's JWKS, where the receipt's kid is published"},
		}},
		"FaxSettings": obj{"type": "object", "additionalProperties": false, "properties": obj{
			"timeZone": str("IANA time zone of the header line and the cover page, e.g. America/New_York; default UTC"),
			"header":   obj{"type": "string", "maxLength": faxes.MaxHeader, "description": "default header text"},
			"sender": obj{"type": "object", "additionalProperties": false, "description": "default sender fields of cover pages", "properties": obj{
				"name": obj{"type": "string", "maxLength": faxes.MaxCoverField}, "company": obj{"type": "string", "maxLength": faxes.MaxCoverField},
				"phone": obj{"type": "string", "maxLength": faxes.MaxCoverField}, "fax": obj{"type": "string", "maxLength": faxes.MaxCoverField},
			}},
			"approveChatSends": obj{"type": "boolean", "description": "every send_fax of a chat app (an OAuth grant over MCP) waits for the owner's passkey approval (docs/mcp.md); set true here, turned off only by the owner in the console: a PUT with false keeps it on"},
		}},
	}
}

func (s *specBuilder) faxProofPaths(opts Options, cfg services.Config) obj {
	const (
		ts    = "2026-01-02T15:04:05Z"
		exp   = "2026-01-02T16:04:05Z"
		faxID = "fax_5v2k8m0q3r7t9w1y4z6b8d0f2h"
		prvID = "prv_3b5d7f9h1k3m5p7r9t1v3x5z7c"
		docID = "doc_7c9e1g3j5k7m9p1r3t5v7x9z1b"
		tok   = ".t9x2k0.c2lnbmF0dXJlc2lnbmF0dXJl"
		sum   = "9f2c4e6a8b0d2f4a6c8e0b2d4f6a8c0e2b4d6f8a0c2e4b6d8f0a2c4e6b8d0f2a"
	)
	fileExample := func(link, page core.Link, id string) obj {
		t := id + tok
		return obj{"url": opts.APIURL + link.PathPrefix() + t, "pages": 2, "sha256": sum, "expiresAt": exp,
			"pageImages": []string{opts.APIURL + page.PathPrefix() + t + "/pages/1", opts.APIURL + page.PathPrefix() + t + "/pages/2"}}
	}
	preview := obj{"id": prvID, "mode": "test", "documentId": docID, "resolution": "fine", "createdAt": ts,
		"files": fileExample(core.LinkPreviewFile, core.LinkPreviewFilePage, prvID),
		"quote": obj{"to": "+12125550100", "country": "US", "pages": 1, "cover": true, "billedPages": 2, "currency": "usd", "amount": "0.14", "amountCents": 14, "tariff": "us"}}
	idParam := pathParam("id", "the fax id (fax_…)")
	notFound := e(404, core.CodeNotFound)
	pdfHeaders := obj{
		"Content-Disposition": obj{"description": `inline; filename="<id>.pdf"`, "schema": obj{"type": "string"}},
		"Cache-Control":       obj{"description": "private, no-store", "schema": obj{"type": "string"}},
	}
	pngResponse := obj{"description": "the page (PNG)", "headers": obj{
		"Cache-Control": obj{"description": "private, max-age=3600, immutable", "schema": obj{"type": "string"}},
	}, "content": obj{"image/png": obj{"schema": obj{"type": "string", "contentMediaType": "image/png"}}}}
	filePaths := func(link, page core.Link, what string) obj {
		return obj{
			link.Path(): obj{"get": obj{
				"operationId": string(link)[len("rest."):], "tags": []string{"faxes"},
				"summary":     "Download " + what + " through a signed link",
				"description": "Needs no Authorization header: the token is the capability, valid until it expires (an hour). A malformed, forged or expired token is a 404 file_link_invalid.",
				"security":    noAuth(),
				"parameters":  []any{pathParam("token", "the token of the signed link")},
				"responses":   s.responses(pdfResponse("the PDF", pdfHeaders), commonErrs(), []errs{e(404, faxes.CodeFileLink)}),
			}},
			page.Path(): obj{"get": obj{
				"operationId": string(page)[len("rest."):], "tags": []string{"faxes"},
				"summary":     "One page of " + what + " as a fax machine prints it",
				"description": fmt.Sprintf("Black and white at the fax's resolution, %d pixels wide. Rendered on request: at most 100 at once then 10 a second per owner (429 rate_limited).", faxes.PageImageWidth),
				"security":    noAuth(),
				"parameters":  []any{pathParam("token", "the token of the signed link"), obj{"name": "page", "in": "path", "required": true, "description": "1 for the first page", "schema": obj{"type": "integer", "minimum": 1}}},
				"responses":   s.responses(pngResponse, commonErrs(), []errs{e(404, faxes.CodeFileLink, faxes.CodePageOutOfRange), e(429, core.CodeRateLimited), e(503, faxes.CodePageImagesUnavailable)}),
			}},
		}
	}
	paths := obj{
		"/api/v1/previews": obj{"post": withScope(core.OpQuote, obj{
			"operationId": "createPreview", "tags": []string{"faxes"},
			"summary":     "See a fax's pages as they will be faxed, before sending",
			"description": "Takes a sendFax body (to is optional: give it for the price and the cover page's fax number) and composes the pages as they will be faxed: the cover page, the header line at the send time, the resolution. Answers links to the PDF and to each page as an image, valid an hour. Nothing is sent, held or charged. At most 20 at once then one a second per owner (429 rate_limited).",
			"requestBody": jsonRequest("SendFaxRequest", true, obj{"to": "+12125550100", "documentId": docID, "resolution": "fine", "coverPage": obj{"recipientName": "Dr. Ada Park", "subject": "Referral"}}),
			"responses": s.responses(s.jsonResponse("the preview", "Preview", preview), authErrs(), []errs{
				e(400, faxes.CodeUndrawableCharacter), e(403, documents.CodeUploadInvalid), notFound, e(409, documents.CodeUploadPending),
				e(415, core.CodeUnsupportedContentType),
				e(422, core.CodeInvalidDestination, core.CodePremiumDestination, core.CodeUnsupportedDestination, documents.CodeCorruptDocument),
				e(429, core.CodeRateLimited),
			}),
		})},
		"/api/v1/faxes/{id}/document": obj{"get": withScope(core.OpGetFax, obj{
			"operationId": "getFaxDocument", "tags": []string{"faxes"},
			"summary":     "The document as faxed",
			"description": "Links to the exact PDF transmitted (cover page and header line included, composed at the first attempt; sha256 is its hash, the one the receipt attests) and to its pages as images. 409 fax_not_yet_faxed before the first attempt (preview it instead); 410 document_purged once the document is past its retention.",
			"parameters":  []any{idParam},
			"responses": s.responses(s.jsonResponse("the document as faxed", "FaxFiles", fileExample(core.LinkFaxFile, core.LinkFaxFilePage, faxID)), authErrs(), []errs{
				notFound, e(409, faxes.CodeNotYetFaxed), e(410, faxes.CodeDocumentPurged),
			}),
		})},
		"/api/v1/faxes/{id}/report": obj{"get": withScope(core.OpGetFax, obj{
			"operationId": "getFaxReportLink", "tags": []string{"faxes"},
			"summary":     "A link to the transmission report of a finished fax",
			"description": "A PDF like a fax machine's confirmation page: date and time, destination, pages sent of total, attempts, duration, result and reason, resolution, the SHA-256 of the document as faxed and a reduced image of page 1. 409 fax_not_finished while the fax can still change.",
			"parameters":  []any{idParam},
			"responses": s.responses(s.jsonResponse("the report link", "ReportLink", obj{"url": opts.APIURL + core.LinkFaxReport.PathPrefix() + faxID + tok, "expiresAt": exp}),
				authErrs(), []errs{notFound, e(409, faxes.CodeFaxNotFinished)}),
		})},
		core.LinkFaxReport.Path(): obj{"get": obj{
			"operationId": "getFaxReport", "tags": []string{"faxes"},
			"summary":     "Download a transmission report through a signed link",
			"description": "Needs no Authorization header: the token is the capability, valid an hour. Rendered on request (429 rate_limited as page images).",
			"security":    noAuth(),
			"parameters":  []any{pathParam("token", "the token of the signed link")},
			"responses":   s.responses(pdfResponse("the report (PDF)", pdfHeaders), commonErrs(), []errs{e(404, faxes.CodeFileLink), e(429, core.CodeRateLimited)}),
		}},
		"/api/v1/faxes/{id}/receipt": obj{"get": withScope(core.OpGetFax, obj{
			"operationId": "getFaxReceipt", "tags": []string{"faxes"},
			"summary":     "A signed delivery receipt of a finished fax",
			"description": "A JWS (EdDSA, its key in faxhub's JWKS with a kid) anyone can verify offline: `faxhub receipt verify FILE`, or any JOSE library (docs/receipts.md). Each call signs a new receipt (a new jti) with the same claims. 409 fax_not_finished while the fax can still change.",
			"parameters":  []any{idParam},
			"responses": s.responses(s.jsonResponse("the receipt", "SignedReceipt", obj{"receipt": "eyJhbGciOiJFZERTQSIsImtpZCI6Ii4uLiIsInR5cCI6ImZheC1yZWNlaXB0K2p3dCJ9.eyJzdWIiOiJmYXhfLi4uIn0.c2lnbmF0dXJl", "jwksUri": opts.BaseURL + "/oauth/jwks"}),
				authErrs(), []errs{notFound, e(409, faxes.CodeFaxNotFinished, faxes.CodeNotYetFaxed), e(503, faxes.CodeReceiptsUnavailable)}),
		})},
		"/api/v1/fax-settings": obj{
			"get": accountSetting(obj{
				"operationId": "getFaxSettings", "tags": []string{"faxes"},
				"summary":     "Your fax defaults",
				"description": "The time zone of header lines and cover pages, the default header text and the default sender of cover pages.",
				"responses":   s.responses(s.jsonResponse("the settings", "FaxSettings", settingsExample()), authErrs()),
			}),
			"put": accountSetting(obj{
				"operationId": "putFaxSettings", "tags": []string{"faxes"},
				"summary":     "Set your fax defaults",
				"description": "Replaces them whole. A fax takes them when it is sent (cover page sender fields) or faxed (header text, time zone).",
				"requestBody": jsonRequest("FaxSettings", true, settingsExample()),
				"responses": s.responses(s.jsonResponse("the settings", "FaxSettings", settingsExample()), authErrs(), []errs{
					e(400, faxes.CodeUndrawableCharacter), e(415, core.CodeUnsupportedContentType),
				}),
			}),
		},
	}
	maps.Copy(paths, filePaths(core.LinkPreviewFile, core.LinkPreviewFilePage, "a preview"))
	maps.Copy(paths, filePaths(core.LinkFaxFile, core.LinkFaxFilePage, "the document as faxed"))
	return paths
}

func settingsExample() obj {
	return obj{"timeZone": "America/New_York", "header": "ACME Legal",
		"sender": obj{"name": "Jane Doe", "company": "ACME Legal LLP", "phone": "+1 212 555 0199", "fax": "+1 212 555 0100"}}
}

// accountSetting is the security of an account setting's operation: an
// API key (agents' tokens are refused with insufficient_scope).
func accountSetting(o obj) obj {
	o["security"] = []any{obj{"apiKey": []string{}}}
	desc, _ := o["description"].(string)
	o["description"] = desc + " Needs an API key: these are the account's settings, which agents' tokens cannot change."
	return o
}

// pdfResponse is a response whose body is a PDF.
func pdfResponse(desc string, headers obj) obj {
	return obj{"description": desc, "headers": headers,
		"content": obj{"application/pdf": obj{"schema": obj{"type": "string", "contentMediaType": "application/pdf"}}}}
}
