package a2a

// The inbox skills answer with core's one presentation of a received fax
// (inbox.ItemView, inbox.FaxView), the numbers skills with numbers.View and
// numbers.AvailableNumber: the shapes docs/a2a.md shows, the same as the
// MCP tools'. Received faxes are given as text and a short-lived download
// link, never the document.
