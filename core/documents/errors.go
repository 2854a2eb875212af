package documents

// Error codes of documents: stable and machine-readable, part of the public API.
const (
	CodeUploadInvalid = "upload_token_invalid"
	CodeUploadExpired = "upload_token_expired"
	CodeUploadUsed    = "upload_token_used"
	CodeUploadPending = "upload_not_completed"
	CodeFileTooLarge  = "file_too_large"
	// CodeStorageQuota: the owner's unsent documents would exceed the
	// storage quota (413); send or let them expire first.
	CodeStorageQuota        = "storage_quota_exceeded"
	CodeEmptyFile           = "empty_file"
	CodeTooManyPages        = "too_many_pages"
	CodeUnsupportedType     = "unsupported_file_type"
	CodeContentTypeMismatch = "content_type_mismatch"
	CodeLibreOfficeMissing  = "converter_unavailable_libreoffice"
	CodeConversionFailed    = "conversion_failed"
	CodeCorruptDocument     = "corrupt_document"
	CodeEncryptedDocument   = "encrypted_document"
)
