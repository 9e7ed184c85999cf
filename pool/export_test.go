package pool

// Slots returns the number of slots of f, for the tests.
func (f *Fixed) Slots() int { return len(f.slots) }
