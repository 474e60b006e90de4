/*
 * sketchd_hll: the register-pair table of two postgresql-hll values,
 * computed where the rows live, so that POST /v1/rank on PostgreSQL or
 * Citus sends a candidate's table (about a kilobyte) rather than its
 * registers (ten at log2m 14), and the per-candidate pass over the
 * registers runs on the server that holds them (docs/postgres.md,
 * "Ranking on the database").
 *
 * sketchd_hll_joint(target hll, candidate hll, key bytea, checksum bytea)
 * returns NULL unless both values are version-1 FULL HLLs with identical
 * parameter and cutoff bytes, a register width of at most 6 bits, a
 * log2m of at most MAX_LOG2M, a body of exactly the packed registers'
 * length, and enough filled registers that sketchd's rule
 * (postgresql-hll's, in internal/hll: SPARSE while strictly smaller)
 * would keep them FULL; and unless checksum is MD5(key || candidate),
 * sketchd's checksum of the row (docs/postgres.md, "Damage"), so that a
 * damaged candidate is never read here: sketchd then reads its bytes and
 * names it. For such a pair it returns:
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

#include "common/cryptohash.h"
#include "fmgr.h"
#include "port/pg_bswap.h"
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

/* unpack_w sets out[0..m) to the registers of width w packed in p, most
 * significant bit first: eight registers are w whole bytes, read as one
 * big-endian word while eight bytes remain, then a byte at a time.
 * Inlined with a constant w, its shifts are constants. */
static inline void
unpack_w(const uint8 *p, uint32 m, uint8 *out, const int w)
{
	const uint64 mask = ((uint64) 1 << w) - 1;
	const uint8 *end = p + (Size) m * w / 8;
	uint32		i = 0;
	int			b,
				k;

	for (; i < m && p + 8 <= end; i += 8, p += w)
	{
		uint64		v;

		memcpy(&v, p, 8);
		v = pg_ntoh64(v) >> (64 - 8 * w);
		for (k = 7; k >= 0; k--)
		{
			out[i + k] = (uint8) (v & mask);
			v >>= w;
		}
	}
	for (; i < m; i += 8)
	{
		uint64		v = 0;

		for (b = 0; b < w; b++)
			v = (v << 8) | *p++;
		for (k = 7; k >= 0; k--)
		{
			out[i + k] = (uint8) (v & mask);
			v >>= w;
		}
	}
}

static void
unpack(const uint8 *p, uint32 m, uint8 *out, int w)
{
	switch (w)
	{
		case 1:
			unpack_w(p, m, out, 1);
			break;
		case 2:
			unpack_w(p, m, out, 2);
			break;
		case 3:
			unpack_w(p, m, out, 3);
			break;
		case 4:
			unpack_w(p, m, out, 4);
			break;
		case 5:
			unpack_w(p, m, out, 5);
			break;
		default:
			unpack_w(p, m, out, 6);
			break;
	}
}

/* checksum_holds reports whether sum (16 bytes) is MD5(key || body). */
static bool
checksum_holds(const bytea *key, const uint8 *body, Size n, const bytea *sum)
{
	pg_cryptohash_ctx *ctx;
	uint8		digest[16];
	bool		ok;

	if (VARSIZE_ANY_EXHDR(key) != 16 || VARSIZE_ANY_EXHDR(sum) != 16)
		return false;
	ctx = pg_cryptohash_create(PG_MD5);
	ok = ctx != NULL &&
		pg_cryptohash_init(ctx) == 0 &&
		pg_cryptohash_update(ctx, (const uint8 *) VARDATA_ANY(key), 16) == 0 &&
		pg_cryptohash_update(ctx, body, n) == 0 &&
		pg_cryptohash_final(ctx, digest, sizeof(digest)) == 0 &&
		memcmp(digest, VARDATA_ANY(sum), 16) == 0;
	pg_cryptohash_free(ctx);
	return ok;
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
	uint8	   *ra,
			   *rb;
	uint64		tzeros = 0,
				czeros = 0;
	bytea	   *out;
	uint8	   *o;

	m = full_registers(t, tn);
	if (m == 0 || cn != tn || t[1] != c[1] || t[2] != c[2] || full_registers(c, cn) != m)
		PG_RETURN_NULL();
	if (!checksum_holds(PG_GETARG_BYTEA_PP(2), c, cn, PG_GETARG_BYTEA_PP(3)))
		PG_RETURN_NULL();
	w = (t[1] >> 5) + 1;
	ra = (uint8 *) palloc((Size) m * 2);
	rb = ra + m;
	unpack(t + 3, m, ra, w);
	unpack(c + 3, m, rb, w);
	joint = (uint32 *) palloc0(sizeof(uint32) * 64 * 64);
	for (i = 0; i < m; i++)
		joint[((uint32) ra[i] << 6) | rb[i]]++;
	pfree(ra);
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
