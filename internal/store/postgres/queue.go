package postgres

import "context"

// enqueue hands o to a committer's queue q unless the store is closing or
// ctx ends first. Close takes closeMu for writing, so nothing is queued
// after it has seen the queues drained.
func enqueue[T any](s *DB, ctx context.Context, q chan<- T, o T) error {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closing.Load() {
		return ErrClosed
	}
	select {
	case q <- o:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// serveGroups is a committer's loop: it takes an item from q with every
// item queued behind it (up to max) that keep accepts, and runs them as
// one group, until s.done is closed; then it runs what is still queued,
// the same way, and returns.
func serveGroups[T any](s *DB, q <-chan T, keep func(T) bool, run func([]T)) {
	defer s.wg.Done()
	gather := func(first T) []T {
		group := make([]T, 0, 8)
		if keep(first) {
			group = append(group, first)
		}
		for len(group) < s.opts.MaxGroup {
			select {
			case o := <-q:
				if keep(o) {
					group = append(group, o)
				}
				continue
			default:
			}
			break
		}
		return group
	}
	for {
		select {
		case first := <-q:
			run(gather(first))
		case <-s.done:
			for {
				select {
				case o := <-q:
					run(gather(o))
				default:
					return
				}
			}
		}
	}
}
