//go:build sketchd_poison

package poison

// Enabled reports whether released buffers are poisoned: this build was
// made with the tag sketchd_poison.
const Enabled = true
