package core

// wrapErr keeps the cause of a caller-facing error for the log.
func WrapErr(e *Error, cause error) *Error {
	e.Err = cause
	return e
}
