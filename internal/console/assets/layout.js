// Layout math for area-proportional Venn diagrams. Pure functions, no DOM:
// the browser tests import this module and check it directly.

const clamp = (x, lo, hi) => Math.min(hi, Math.max(lo, x));

// radius returns the radius of a circle of the given area.
export function radius(area) {
  return Math.sqrt(Math.max(0, area) / Math.PI);
}

// aMinusSin is a − sin(a), without the cancellation of the direct
// formula for small a (a Taylor series below 0.5).
function aMinusSin(a) {
  if (a >= 0.5) return a - Math.sin(a);
  const a2 = a * a;
  return a * a2 * (1 / 6 - a2 * (1 / 120 - a2 * (1 / 5040 - a2 * (1 / 362880 - a2 / 39916800))));
}

// lensArea is the area of the intersection of two circles of radii r1, r2
// whose centres are d apart: the sum of two circular segments, each
// r²(2θ − sin 2θ)/2 for the half-angle θ its chord subtends. The half
// chord comes from the product form of Heron's formula and the angles from
// atan2, so the area stays accurate to the last digits even for a sliver
// between very different circles.
export function lensArea(r1, r2, d) {
  const small = Math.min(r1, r2);
  if (d >= r1 + r2) return 0;
  if (d <= Math.abs(r1 - r2)) return Math.PI * small * small;
  const k = (-d + r1 + r2) * (d + r1 - r2) * (d - r1 + r2) * (d + r1 + r2);
  const h = Math.sqrt(Math.max(0, k)) / (2 * d);
  const x1 = (d * d + r1 * r1 - r2 * r2) / (2 * d);
  const x2 = d - x1;
  const t1 = Math.atan2(h, x1);
  const t2 = Math.atan2(h, x2);
  return (r1 * r1 * aMinusSin(2 * t1) + r2 * r2 * aMinusSin(2 * t2)) / 2;
}

// lensDistance is the inverse of lensArea in d: the distance between the
// centres at which the circles overlap by area. The lens area falls
// monotonically from the smaller circle's area at d = |r1 - r2| to 0 at
// d = r1 + r2, so bisection converges; areas outside that range are
// clamped to its ends.
export function lensDistance(r1, r2, area) {
  const lo0 = Math.abs(r1 - r2);
  const hi0 = r1 + r2;
  const small = Math.min(r1, r2);
  if (area <= 0 || small <= 0) return hi0;
  if (area >= Math.PI * small * small) return lo0;
  let lo = lo0;
  let hi = hi0;
  for (let i = 0; i < 200 && hi - lo > 1e-13 * hi0; i++) {
    const mid = (lo + hi) / 2;
    if (lensArea(r1, r2, mid) > area) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

// lensPath returns the SVG path of the lens of circles a and b ({x, y, r})
// and the midpoint of its chord, or null when they do not overlap. When
// one circle lies inside the other the lens is the smaller circle.
export function lensPath(a, b) {
  const dx = b.x - a.x;
  const dy = b.y - a.y;
  const d = Math.hypot(dx, dy);
  if (d >= a.r + b.r || a.r <= 0 || b.r <= 0) return null;
  if (d <= Math.abs(a.r - b.r)) {
    const s = a.r <= b.r ? a : b;
    return {
      d: `M ${s.x - s.r} ${s.y} a ${s.r} ${s.r} 0 1 0 ${2 * s.r} 0 a ${s.r} ${s.r} 0 1 0 ${-2 * s.r} 0 Z`,
      cx: s.x, cy: s.y,
    };
  }
  const along = (a.r * a.r - b.r * b.r + d * d) / (2 * d);
  const h = Math.sqrt(Math.max(0, a.r * a.r - along * along));
  const mx = a.x + (along * dx) / d;
  const my = a.y + (along * dy) / d;
  const nx = -dy / d;
  const ny = dx / d;
  const p = [mx + h * nx, my + h * ny];
  const q = [mx - h * nx, my - h * ny];
  // The arc of a inside b spans more than half of a when a's centre lies
  // beyond the chord (along < 0); likewise for b.
  const largeA = along < 0 ? 1 : 0;
  const largeB = d - along < 0 ? 1 : 0;
  return {
    d: `M ${p[0]} ${p[1]} A ${a.r} ${a.r} 0 ${largeA} 0 ${q[0]} ${q[1]} A ${b.r} ${b.r} 0 ${largeB} 0 ${p[0]} ${p[1]} Z`,
    cx: mx, cy: my,
  };
}

// layoutTwo places two circles of the given areas so that they overlap by
// overlap (clamped to [0, smaller area]). Circles are {x, y, r}, a at the
// origin, b on the positive x axis.
export function layoutTwo(areaA, areaB, overlap) {
  const ra = radius(areaA);
  const rb = radius(areaB);
  const d = lensDistance(ra, rb, overlap);
  return [{ x: 0, y: 0, r: ra }, { x: d, y: 0, r: rb }];
}

// tripleArea measures the area common to three circles numerically on an
// n×n grid over the smallest circle's bounding box.
export function tripleArea(c, n = 320) {
  const s = c.reduce((m, x) => (x.r < m.r ? x : m));
  if (s.r <= 0) return 0;
  const step = (2 * s.r) / n;
  let hits = 0;
  for (let i = 0; i < n; i++) {
    const x = s.x - s.r + (i + 0.5) * step;
    for (let j = 0; j < n; j++) {
      const y = s.y - s.r + (j + 0.5) * step;
      let inside = true;
      for (const k of c) {
        const ex = x - k.x;
        const ey = y - k.y;
        if (ex * ex + ey * ey > k.r * k.r) {
          inside = false;
          break;
        }
      }
      if (inside) hits++;
    }
  }
  return hits * step * step;
}

const PAIRS = [[0, 1], [0, 2], [1, 2]];

// layoutThree places three circles with areas areas[i] so that each pair
// (0,1), (0,2), (1,2) overlaps by pairs[k] as nearly as circles allow,
// and reports how far the drawing is from the numbers: for each pair and
// for the region common to all three (target triple), the drawn area, and
// error, the largest difference as a fraction of the smallest circle.
//
// The distances come from lensDistance; if they form a triangle the
// pairwise overlaps are exact, else a descent on the squared distance
// misfits finds a compromise, and the report says how far off it is. The triple region follows
// from the pairs and is only measured, never fitted.
export function layoutThree(areas, pairs, triple) {
  const r = areas.map(radius);
  const dist = PAIRS.map(([i, j], k) => lensDistance(r[i], r[j], pairs[k]));
  const [d01, d02, d12] = dist;
  const x2 = d01 > 0 ? (d01 * d01 + d02 * d02 - d12 * d12) / (2 * d01) : d02;
  const y2sq = d02 * d02 - x2 * x2;
  // Free coordinates: b.x, c.x, c.y (a fixed at the origin, b on the x axis).
  let v = [d01, x2, Math.sqrt(Math.max(0, y2sq))];
  const circles = (p) => [{ x: 0, y: 0, r: r[0] }, { x: p[0], y: 0, r: r[1] }, { x: p[1], y: p[2], r: r[2] }];
  // Squared misfit of the centre distances: smooth everywhere, unlike the
  // lens areas, which stop changing once two circles are apart.
  const loss = (p) => {
    const c = circles(p);
    let s = 0;
    PAIRS.forEach(([i, j], k) => {
      const e = Math.hypot(c[i].x - c[j].x, c[i].y - c[j].y) - dist[k];
      s += e * e;
    });
    return s;
  };
  let iterations = 0;
  if (y2sq < 0) {
    // The distances break the triangle inequality: start from the nearest
    // line-up (c on the x axis, nudged off it so it can move in y) and
    // descend.
    const span = Math.max(...r) || 1;
    v[1] = clamp(x2, -d02, d02);
    v[2] = 1e-3 * span;
    let step = 0.05 * span;
    let cur = loss(v);
    for (; iterations < 5000 && step > 1e-12 * span; iterations++) {
      const h = 1e-7 * span;
      const g = v.map((_, i) => {
        const w = v.slice();
        w[i] += h;
        return (loss(w) - cur) / h;
      });
      const norm = Math.hypot(...g) || 1;
      const next = v.map((x, i) => x - (step * g[i]) / norm);
      const nl = loss(next);
      if (nl < cur) {
        v = next;
        cur = nl;
        step *= 1.2;
      } else {
        step *= 0.5;
      }
    }
  }
  const c = circles(v);
  const smallest = Math.min(...areas.map((a) => Math.max(a, 0)));
  const frac = (x) => (smallest > 0 ? x / smallest : 0);
  const pairReport = PAIRS.map(([i, j], k) => {
    const drawn = lensArea(r[i], r[j], Math.hypot(c[i].x - c[j].x, c[i].y - c[j].y));
    return { sets: [i, j], target: pairs[k], drawn, error: frac(Math.abs(drawn - pairs[k])) };
  });
  const tripleDrawn = tripleArea(c);
  const tripleError = frac(Math.abs(tripleDrawn - triple));
  const pairError = Math.max(...pairReport.map((p) => p.error));
  return {
    circles: c,
    pairs: pairReport,
    triple: { target: triple, drawn: tripleDrawn, error: tripleError },
    pairError,
    error: Math.max(pairError, tripleError),
    iterations,
  };
}
