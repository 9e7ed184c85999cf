package fakes

// SetKeepFinalized lowers the number of finalized sessions a server
// remembers, for a test, and returns a function that restores it.
func SetKeepFinalized(n int) (restore func()) {
	old := keepFinalized
	keepFinalized = n
	return func() { keepFinalized = old }
}
