package bolt

// A sketch changed since the last checkpoint stays in memory until a
// checkpoint has copied it into bbolt. Decoded, a small sketch costs
// several times its bytes there: a state (times, expiry, flags), the
// sketch's headers and its registers, on top of the entry itself; with
// many new small sketches waiting for their checkpoint (a burst of
// events creating them), that was most of the process's memory. So once
// nobody uses such an entry, it is packed: its decoded state is dropped
// and its record, the bytes the checkpoint writes anyway, is what it
// keeps (entry.enc, valid for entry.gen). The next user unpacks it
// (decodeEntry: about a microsecond for a few ids); the checkpoint
// copies the record as it is; a listing decodes it without keeping the
// result.
//
// The rule that keeps this safe: an entry is packed only by its last
// user, in release, with its lock and cacheMu held and no pin left, and
// unpacked in acquire, under its lock, by every user that finds it
// packed after pinning it. So whoever holds a pin sees st, and an
// unpinned entry is read only under its lock (checkpoint, listing,
// rebuild), which all read a packed one from its record.

// packCandidate reports, without locks, whether releasing e may pack it:
// a changed, unpacked sketch (not a series definition or bucket) of at
// most smallEntryBytes. packLocked checks again under the locks.
func packCandidate(e *entry) bool {
	return e.dirty.Load() && !e.packed.Load() && isSketchName(e.name) && e.mem.Load() <= smallEntryBytes
}

// packLocked packs e (see above) if it is a changed small sketch, and
// returns how much its memory changed. A sketch exported on /metrics,
// one without a state (deleted) and an unreadable one stay as they are.
// Called by e's last user with e.mu and cacheMu held.
func (s *DB) packLocked(e *entry) int64 {
	st := e.st
	if e.packed.Load() || st == nil || st.sk == nil || st.metric || e.unreadable || !e.dirty.Load() || !isSketchName(e.name) {
		return 0
	}
	before := e.mem.Load()
	if before > smallEntryBytes {
		return 0
	}
	if e.enc == nil || e.encGen != e.gen {
		e.enc = appendRecord(nil, e.name, st)
		e.encGen = e.gen
	}
	e.st = nil
	e.packed.Store(true)
	mem := packedMemory(e)
	e.mem.Store(mem)
	return mem - before
}

// packedMemory approximates the heap of a packed entry: the entry's
// overhead, its name and its record.
func packedMemory(e *entry) int64 {
	return int64(entryOverhead + len(e.name) + cap(e.enc))
}

// unpack decodes a packed entry's record back into its state, which its
// users change. Called with e.mu held, by a user that pinned e (or with
// writers excluded).
func (s *DB) unpack(e *entry) error {
	if !e.packed.Load() {
		return nil
	}
	st, err := decodeEntry(e.name, e.enc)
	if err != nil {
		// The store encoded this record itself: memory is damaged.
		return damaged(e.name, s.path, err)
	}
	e.st = st
	e.packed.Store(false)
	mem := entryMemory(e.name, st)
	s.adjustDirty(e, mem-e.mem.Swap(mem))
	return nil
}

// current returns e's state, decoding a packed entry's record into a
// state nobody else holds (e stays packed). Called with e.mu held.
func (s *DB) current(e *entry) (*state, error) {
	if !e.packed.Load() {
		return e.st, nil
	}
	st, err := decodeEntry(e.name, e.enc)
	if err != nil {
		return nil, damaged(e.name, s.path, err)
	}
	return st, nil
}

// exists reports whether e holds a sketch (or series definition):
// decoded, or packed. Called with e.mu held.
func (e *entry) exists() bool { return e.st != nil || e.packed.Load() }

// adjustDirty adds delta to the memory the changed sketches are counted
// as holding, if e is among those the next checkpoint copies.
func (s *DB) adjustDirty(e *entry, delta int64) {
	if delta == 0 {
		return
	}
	s.dirtyMu.Lock()
	if e.inDirty {
		s.dirtyBytes.Add(delta)
	}
	s.dirtyMu.Unlock()
}
