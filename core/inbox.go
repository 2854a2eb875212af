package core

// The inbox: faxes received on an owner's numbers. A provider tells core a
// fax arrived (ReceiveFax: a webhook, or the simulator); core records it as
// receiving and enqueues its processing in the same transaction, so a
// webhook is acknowledged only once the fax cannot be lost, and a duplicate
// notice (same provider reference) changes nothing. ProcessInboundFax, a
// job, fetches the document (bounded like an upload), checks it and counts
// its pages with the Converter, keeps it in the blob store and extracts its
// text (TextExtractor: the text layer where there is one, OCR for scanned
// pages when tesseract is installed), then marks the entry received. Agents
// read the text; the PDF is downloaded through a short-lived signed link.

// PrefixInbound names a received fax.
const PrefixInbound = "inb_"
