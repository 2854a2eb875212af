package convert

// OfficePath is the LibreOffice binary office documents are converted with,
// or an error when there is none; serve warns at start-up instead of letting
// the first Word upload discover it.
func (c *Converter) OfficePath() (string, error) { return c.soffice() }
