// Time zone arithmetic for series, as the server does it (docs/series.md):
// where a series' local days begin, and how its times read in its zone.
// Pure functions over Intl, so the browser's own tz data decides offsets.

const zoneFormats = new Map();

// tzOffset is the offset of time zone tz from UTC at instant ms, in ms.
export function tzOffset(tz, ms) {
  let f = zoneFormats.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: tz, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit',
    });
    zoneFormats.set(tz, f);
  }
  const v = Object.fromEntries(f.formatToParts(new Date(ms)).map((p) => [p.type, Number(p.value)]));
  return Date.UTC(v.year, v.month - 1, v.day, v.hour, v.minute, v.second) - Math.floor(ms / 1000) * 1000;
}

// midnight is the instant a calendar day (YYYY-MM-DD) starts in tz: the
// instant from which on the zone's clocks show that day or a later one.
// That is local midnight; the DST change where midnight is skipped
// (Santiago's 2026-09-06 starts at 01:00); the first midnight where
// clocks go back to 00:00 (Havana), the second where they go back across
// it (Goose Bay's changes at 00:01); and a skipped date (Apia's
// 2011-12-30) starts with the next one.
export function midnight(day, tz) {
  const [y, m, d] = day.split('-').map(Number);
  const u = Date.UTC(y, m - 1, d); // midnight read as UTC
  const H = 3600e3;
  const clock = (t) => t + tzOffset(tz, t);
  const off = tzOffset(tz, u);
  if (tzOffset(tz, u - 27 * H) === off && tzOffset(tz, u + 27 * H) === off) {
    // No change near (no zone changes and changes back within two
    // days): midnight.
    return new Date(u - off);
  }
  // The offset changes within 27 hours of u (no zone's offset is
  // larger): hourly samples, then halving to the second.
  const changes = [];
  for (let t = u - 27 * H; t < u + 27 * H; t += H) {
    if (tzOffset(tz, t) === tzOffset(tz, t + H)) continue;
    let lo = t;
    let hi = t + H;
    while (hi - lo > 1000) {
      const mid = lo + Math.floor((hi - lo) / 2000) * 1000;
      if (tzOffset(tz, mid) === tzOffset(tz, lo)) lo = mid;
      else hi = mid;
    }
    changes.push(hi);
  }
  // The day starts at one of the changes, or where the clock of one of
  // the offsets in effect reads midnight: the last instant at which the
  // clock goes from an earlier day to this one.
  const candidates = [...changes, ...[u - 27 * H, ...changes].map((t) => u - tzOffset(tz, t))];
  const starts = candidates.filter((c) => clock(c - 1000) < u && clock(c) >= u);
  return new Date(starts.length ? Math.max(...starts) : u - off);
}

// dayOf is the calendar day (YYYY-MM-DD) of instant iso in tz.
export function dayOf(iso, tz) {
  return new Intl.DateTimeFormat('en-CA', { timeZone: tz, year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date(iso));
}

// addDays is the calendar day n days after day (YYYY-MM-DD).
export function addDays(day, n) {
  const [y, m, d] = day.split('-').map(Number);
  return new Date(Date.UTC(y, m - 1, d + n)).toISOString().slice(0, 10);
}

// stamp reads instant ms in tz as "YYYY-MM-DD HH:MM" and the zone's
// offset there ("+01:00", "-03:30"), or "UTC" in UTC.
export function stamp(ms, tz) {
  const off = tzOffset(tz, ms);
  const local = new Date(Math.floor(ms / 1000) * 1000 + off).toISOString().slice(0, 16).replace('T', ' ');
  if (tz === 'UTC') return `${local} UTC`;
  const m = Math.abs(off) / 60000;
  return `${local} ${off < 0 ? '-' : '+'}${String(Math.floor(m / 60)).padStart(2, '0')}:${String(Math.floor(m % 60)).padStart(2, '0')}`;
}
