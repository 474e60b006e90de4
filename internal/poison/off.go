//go:build !sketchd_poison

package poison

// Enabled reports whether released buffers are poisoned: this build was
// made without the tag sketchd_poison, so Release does nothing.
const Enabled = false
