package postgres

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// probeTimeout bounds each readiness probe: a ping of the database, and
// on Citus a statement run on the workers.
const probeTimeout = 2 * time.Second

// Dependency is one thing a node needs to commit: the database (the
// coordinator on Citus), or one Citus worker.
type Dependency struct {
	Name string // "database", or "worker HOST:PORT"
	Up   bool
	// Err says why it is down, as the last probe found it.
	Err string
}

// health is what the last probes found.
type health struct {
	mu   sync.Mutex
	deps []Dependency
	// last is the failure that made the node unready before a probe
	// looked, if any.
	last string
}

func (h *health) set(deps []Dependency) {
	h.mu.Lock()
	h.deps, h.last = deps, ""
	h.mu.Unlock()
}

func (h *health) failed(err error) {
	h.mu.Lock()
	h.last = err.Error()
	h.mu.Unlock()
}

// Dependencies reports what the last readiness probe found of each
// dependency (the database, and on Citus each worker), for /readyz and
// sketchd_store_dependency_up.
func (s *DB) Dependencies() []Dependency {
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	return append([]Dependency(nil), s.health.deps...)
}

// NotReady says why the node cannot commit now, naming the dependency
// that failed, or "" when it can.
func (s *DB) NotReady() string {
	switch {
	case s.closing.Load():
		return "the store is closing"
	case s.Ready():
		return ""
	}
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	if s.health.last != "" {
		return "a request to the database failed (probing it now): " + s.health.last
	}
	for _, d := range s.health.deps {
		if !d.Up {
			return fmt.Sprintf("%s is unreachable: %s", d.Name, d.Err)
		}
	}
	return "the database is unreachable"
}

// probeNodesSQL lists the Citus workers (every primary node but the
// coordinator's group), which hold the sketches' shards.
const probeNodesSQL = `SELECT nodename, nodeport FROM pg_dist_node WHERE noderole = 'primary' AND isactive AND groupid <> 0 ORDER BY nodename, nodeport`

// runOnWorkersSQL runs SELECT 1 on the workers named, through the
// coordinator's own connections to them: a worker the coordinator cannot
// reach fails it (or leaves it waiting until the probe gives up).
const runOnWorkersSQL = `SELECT node_name, node_port, success, result FROM master_run_on_worker($1::text[], $2::int[], array_fill('SELECT 1'::text, ARRAY[cardinality($1::text[])]), true)`

// probe asks the database, and on Citus each worker through the
// coordinator, whether it answers, and records what it found.
func (s *DB) probe() (ok bool, deps []Dependency) {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	err := s.pool.Ping(ctx)
	cancel()
	db := Dependency{Name: "database", Up: err == nil}
	if err != nil {
		db.Err = err.Error()
		return false, []Dependency{db}
	}
	deps = []Dependency{db}
	if s.placements == nil {
		return true, deps
	}
	workers, err := s.workers()
	if err != nil {
		deps[0] = Dependency{Name: "database", Err: "listing the Citus workers: " + err.Error()}
		return false, deps
	}
	// All at once first; if that fails, one at a time, to name which.
	up := s.runOnWorkers(workers)
	if up == nil {
		for _, w := range workers {
			if r := s.runOnWorkers([]worker{w}); r != nil {
				up = append(up, r...)
			} else {
				up = append(up, Dependency{Name: w.String(), Err: fmt.Sprintf("no answer within %v", probeTimeout)})
			}
		}
	}
	ok = true
	for _, d := range up {
		ok = ok && d.Up
	}
	return ok, append(deps, up...)
}

type worker struct {
	host string
	port int32
}

func (w worker) String() string { return "worker " + w.host + ":" + strconv.Itoa(int(w.port)) }

func (s *DB) workers() ([]worker, error) {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	rows, err := s.pool.Query(ctx, probeNodesSQL)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ws []worker
	for rows.Next() {
		var w worker
		if err := rows.Scan(&w.host, &w.port); err != nil {
			return nil, err
		}
		ws = append(ws, w)
	}
	return ws, rows.Err()
}

// runOnWorkers runs runOnWorkersSQL on ws and reports each, or nil if
// the statement itself failed or did not finish within probeTimeout.
func (s *DB) runOnWorkers(ws []worker) []Dependency {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	hosts := make([]string, len(ws))
	ports := make([]int32, len(ws))
	for i, w := range ws {
		hosts[i], ports[i] = w.host, w.port
	}
	rows, err := s.pool.Query(ctx, runOnWorkersSQL, hosts, ports)
	if err != nil {
		return nil
	}
	defer rows.Close()
	var out []Dependency
	for rows.Next() {
		var w worker
		var success bool
		var result string
		if err := rows.Scan(&w.host, &w.port, &success, &result); err != nil {
			return nil
		}
		d := Dependency{Name: w.String(), Up: success}
		if !success {
			d.Err = result
		}
		out = append(out, d)
	}
	if rows.Err() != nil {
		return nil
	}
	return out
}
