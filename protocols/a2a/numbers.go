package a2a

import (
	"github.com/faxhub/faxhub/core/inbox"
)

// Results of the inbox skills, in the JSON docs/a2a.md shows: the same
// shapes as the MCP tools'. Received faxes are given as text and a
// short-lived download link, never the document. (Numbers are shown as
// core presents them to every agent door: numbers.View and
// numbers.AvailableNumber.)
type (
	inboxItemOut struct {
		ID            string `json:"id"`
		NumberID      string `json:"numberId"`
		From          string `json:"from"`
		To            string `json:"to"`
		Pages         int    `json:"pages"`
		Status        string `json:"status"`
		TextStatus    string `json:"textStatus,omitempty"`
		TextPreview   string `json:"textPreview,omitempty"`
		FailureReason string `json:"failureReason,omitempty"`
		ReceivedAt    string `json:"receivedAt"`
	}
	inboxFaxOut struct {
		inboxItemOut
		Text              string `json:"text"`
		TextMethod        string `json:"textMethod,omitempty"`
		TextNote          string `json:"textNote,omitempty"`
		DownloadURL       string `json:"downloadUrl,omitempty"`
		DownloadExpiresAt string `json:"downloadExpiresAt,omitempty"`
	}
)

func inboxItem(f *inbox.InboundFax) inboxItemOut {
	return inboxItemOut{
		ID: f.ID, NumberID: f.NumberID, From: f.From, To: f.To, Pages: f.Pages, Status: string(f.Status), TextStatus: string(f.TextStatus),
		TextPreview: f.TextPreview, FailureReason: f.FailureReason, ReceivedAt: rfc3339(f.ReceivedAt),
	}
}
