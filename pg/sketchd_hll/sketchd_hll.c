/*
 * sketchd_hll: the register-pair table of two postgresql-hll values,
 * computed where the rows live, so that POST /v1/rank on PostgreSQL or
 * Citus sends a candidate's table (about a kilobyte) rather than its
 * registers (ten at log2m 14), and the per-candidate pass over the
 * registers runs on the server that holds them (docs/postgres.md,
 * "Ranking on the database").
 *
 * sketchd_hll_joint(target hll, candidate hll) returns NULL unless both
 * values are version-1 FULL HLLs with identical parameter and cutoff
 * bytes, a register width of at most 6 bits, a log2m of at most
 * MAX_LOG2M, a body of exactly the packed registers' length, and enough
 * filled registers that sketchd's rule (postgresql-hll's, in
 * internal/hll: SPARSE while strictly smaller) would keep them FULL. For
 * such a pair it returns:
 *
 *   byte 0     JOINT_VERSION
 *   byte 1     vmax, the highest register value either holds
 *   then, for each pair (va, vb) held by at least one position, in
 *   ascending order of va * 64 + vb:
 *     2 bytes  va * 64 + vb, big-endian
 *     uvarint  the number of positions (7 bits a byte, least significant
 *              group first, high bit set on every byte but the last)
 *
 * sketchd checks what it reads (internal/sketch/joint.go, DecodeJoint):
 * the counts must add up to the number of registers, and every value
 * stay within vmax, which some pair must reach. The rule for NULL is
 * sketchd's eligibility for its one-pass intersection of two FULL
 * sketches; sketchd checks it again on the table.
 */
#include "postgres.h"

#include "fmgr.h"
#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#endif

PG_MODULE_MAGIC;

#define JOINT_VERSION 1
#define MAX_LOG2M 20
#define MAX_REGWIDTH 6
#define TYPE_FULL 4

PG_FUNCTION_INFO_V1(sketchd_hll_joint);

/* full_registers checks that b (n bytes) is a FULL HLL and returns its
 * register count, or 0 when it is not one sketchd_hll_joint reads. */
static uint32
full_registers(const uint8 *b, Size n)
{
	int			log2m,
				regwidth;
	uint64		bits;

	if (n < 3 || b[0] != ((1 << 4) | TYPE_FULL))
		return 0;
	regwidth = (b[1] >> 5) + 1;
	log2m = b[1] & 0x1f;
	if (regwidth > MAX_REGWIDTH || log2m > MAX_LOG2M)
		return 0;
	bits = ((uint64) 1 << log2m) * (uint64) regwidth;
	if (n - 3 != (bits + 7) / 8)
		return 0;
	return (uint32) 1 << log2m;
}

/* Reads registers of width w from a big-endian bit stream, most
 * significant bit first. */
typedef struct
{
	const uint8 *p;
	uint32		acc;
	int			bits;
	int			w;
	uint32		mask;
} reader;

static inline uint32
next_register(reader *r)
{
	uint32		v;

	if (r->bits < r->w)
	{
		r->acc = (r->acc << 8) | *r->p++;
		r->bits += 8;
	}
	v = (r->acc >> (r->bits - r->w)) & r->mask;
	r->bits -= r->w;
	return v;
}

/* stays_full is sketchd's rule: with sparse enabled, registers of which
 * filled are non-zero are SPARSE while filled * (log2m + regwidth) <
 * m * regwidth. */
static bool
stays_full(const uint8 *b, uint64 m, uint64 filled)
{
	int			regwidth = (b[1] >> 5) + 1;
	int			log2m = b[1] & 0x1f;
	bool		sparse = (b[2] >> 6) & 1;

	return !sparse || filled * (uint64) (log2m + regwidth) >= m * (uint64) regwidth;
}

Datum
sketchd_hll_joint(PG_FUNCTION_ARGS)
{
	bytea	   *ta = PG_GETARG_BYTEA_PP(0);
	bytea	   *ca = PG_GETARG_BYTEA_PP(1);
	const uint8 *t = (const uint8 *) VARDATA_ANY(ta);
	const uint8 *c = (const uint8 *) VARDATA_ANY(ca);
	Size		tn = VARSIZE_ANY_EXHDR(ta);
	Size		cn = VARSIZE_ANY_EXHDR(ca);
	uint32		m,
				i;
	int			w,
				vmax,
				cell,
				cells;
	uint32	   *joint;
	uint64		tzeros = 0,
				czeros = 0;
	reader		rt,
				rc;
	bytea	   *out;
	uint8	   *o;

	m = full_registers(t, tn);
	if (m == 0 || cn != tn || t[1] != c[1] || t[2] != c[2] || full_registers(c, cn) != m)
		PG_RETURN_NULL();
	w = (t[1] >> 5) + 1;
	joint = (uint32 *) palloc0(sizeof(uint32) * 64 * 64);
	rt.p = t + 3;
	rc.p = c + 3;
	rt.acc = rc.acc = 0;
	rt.bits = rc.bits = 0;
	rt.w = rc.w = w;
	rt.mask = rc.mask = ((uint32) 1 << w) - 1;
	for (i = 0; i < m; i++)
	{
		uint32		va = next_register(&rt);
		uint32		vb = next_register(&rc);

		joint[(va << 6) | vb]++;
	}
	vmax = 0;
	cells = 0;
	for (cell = 0; cell < 64 * 64; cell++)
	{
		if (joint[cell] == 0)
			continue;
		cells++;
		if ((cell >> 6) > vmax)
			vmax = cell >> 6;
		if ((cell & 63) > vmax)
			vmax = cell & 63;
		if ((cell & 63) == 0)
			czeros += joint[cell];
		if ((cell >> 6) == 0)
			tzeros += joint[cell];
	}
	if (!stays_full(t, m, m - tzeros) || !stays_full(c, m, m - czeros))
	{
		pfree(joint);
		PG_RETURN_NULL();
	}
	/* Two bytes of cell and at most five of count (m <= 2^20) a cell. */
	out = (bytea *) palloc(VARHDRSZ + 2 + (Size) cells * 7);
	o = (uint8 *) VARDATA(out);
	*o++ = JOINT_VERSION;
	*o++ = (uint8) vmax;
	for (cell = 0; cell < 64 * 64; cell++)
	{
		uint32		n = joint[cell];

		if (n == 0)
			continue;
		*o++ = (uint8) (cell >> 8);
		*o++ = (uint8) cell;
		while (n >= 0x80)
		{
			*o++ = (uint8) (n | 0x80);
			n >>= 7;
		}
		*o++ = (uint8) n;
	}
	SET_VARSIZE(out, o - (uint8 *) out);
	pfree(joint);
	PG_RETURN_BYTEA_P(out);
}
