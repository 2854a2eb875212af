package inbox

import "github.com/faxhub/faxhub/core"

// ItemView is how the agent doors (MCP list_inbox, A2A list_inbox,
// hostagent list_inbox) show a received fax in a list: one presentation,
// like faxes.View, so the doors cannot drift apart. hostagent renders it
// with snake_case keys. The jsonschema tags describe the fields in the MCP
// tools' output schemas.
type ItemView struct {
	ID            string `json:"id" jsonschema:"the received fax's id (inb_…); pass it to read_inbox_fax"`
	NumberID      string `json:"numberId"`
	From          string `json:"from" jsonschema:"the sender's number as the network gave it (may be empty)"`
	To            string `json:"to" jsonschema:"the owner's number it arrived on"`
	Pages         int    `json:"pages"`
	Status        string `json:"status" jsonschema:"receiving (being fetched and read), received or failed"`
	TextStatus    string `json:"textStatus,omitempty" jsonschema:"extracted, ocr_unavailable, empty, failed or truncated"`
	TextPreview   string `json:"textPreview,omitempty" jsonschema:"the start of the fax's text"`
	FailureReason string `json:"failureReason,omitempty"`
	ReceivedAt    string `json:"receivedAt"`
}

// FaxView is one received fax read whole (read_inbox_fax): its text and,
// once received, a short-lived link to the PDF; never the document.
type FaxView struct {
	ItemView
	Text       string `json:"text" jsonschema:"the fax's text as read from its pages (text layer, or OCR of scanned pages)"`
	TextMethod string `json:"textMethod,omitempty" jsonschema:"how the text was read: text, ocr, text+ocr or none"`
	TextNote   string `json:"textNote,omitempty" jsonschema:"what could not be read, in plain words"`
	// DownloadURL is set once the fax is received.
	DownloadURL       string `json:"downloadUrl,omitempty" jsonschema:"a short-lived link to the PDF (no Authorization header needed); give it to the user to see the pages"`
	DownloadExpiresAt string `json:"downloadExpiresAt,omitempty"`
}

// PresentItem is f as the agent doors list it. Times are RFC 3339 in UTC,
// to the second.
func PresentItem(f *InboundFax) ItemView {
	return ItemView{
		ID: f.ID, NumberID: f.NumberID, From: f.From, To: f.To, Pages: f.Pages, Status: string(f.Status),
		TextStatus: string(f.TextStatus), TextPreview: f.TextPreview, FailureReason: f.FailureReason,
		ReceivedAt: core.RFC3339(f.ReceivedAt),
	}
}

// PresentFax is f read whole, with its download link when there is one
// (Download makes it; a fax still receiving has none).
func PresentFax(f *InboundFax, link *Link) FaxView {
	v := FaxView{ItemView: PresentItem(f), Text: f.Text, TextMethod: f.TextMethod, TextNote: f.ReadingNote()}
	if link != nil {
		v.DownloadURL, v.DownloadExpiresAt = link.URL, core.RFC3339(link.ExpiresAt)
	}
	return v
}
