// Interop answers sketch questions with the Java libraries for sketchd's
// interoperability tests (package javatest runs it). It reads one request
// a line on stdin, space-separated tokens, and writes one line for each:
// "ok" and the answer's tokens, or "err" and the exception. Sketches
// travel as lower-case hex ("-" for none); doubles as the decimal value of
// their IEEE-754 bits, so that nothing is lost on the way.
//
// Requests (lgK is log2 of the nominal entries; ids lo..hi-1 are longs;
// strs is a comma-separated list of UTF-8 strings each hex-encoded after
// an "x" (so that "x" is the empty string), or "-" for none):
//   theta_build lgK lo hi strs   -> compact ordered, compressed, update-sketch bytes, then a description
//   theta_read hex               -> compact ordered bytes, then a description
//   theta_union lgK hex...       -> the union's compact ordered bytes, then a description
//   freq_build lgK lo hi xlo xhi xcount -> compact bytes, then a description
//                                   (ids lo..hi-1 once, xlo..xhi-1 xcount more times)
//   freq_read hex                -> compact bytes, then a description
//   freq_union lgK hex...        -> compact bytes, then a description
//   hll_build lgK type lo hi strs -> compact, updatable bytes, then a description
//                                   (type HLL_4, HLL_6 or HLL_8)
//   hll_read hex                 -> compact bytes, then a description
//   hll_union lgK type hex...    -> the union's compact bytes, then a description
// An HLL description is: estimate, lower bounds at 1..3, upper bounds at
// 1..3 standard deviations, lg_k, the mode (LIST, SET, HLL, from the
// image's mode byte: HllSketch does not make it public).
//   cpc_build lgK lo hi strs     -> bytes, then a description
//   cpc_read hex                 -> bytes, then a description
//   cpc_union lgK hex...         -> the union's bytes, then a description
//   zeta_build p sp kind lo hi reps strs -> bytes, then a description: a
//                                   ZetaSketch HLL++ of precision p and
//                                   sparse precision sp (-1: the builder's
//                                   default, 0: noSparseMode) for kind
//                                   longs (ids lo..hi-1) or strings (strs),
//                                   each added reps times
//   zeta_read hex                -> bytes (forProto, then serialized again), then a description
//   zeta_union hex...            -> the first merged with the others in turn: bytes, then a description
//   zeta_hash hex                -> ZetaSketch's hash (Fingerprint2011) of the bytes, as a long
//   zeta_time op n               -> nanoseconds for n operations at precision 15, after as many
//                                   to warm up: op add (a long into a normal sketch of 100,000),
//                                   build (a sparse sketch of 5,000 longs, serialized), union (of
//                                   100 normal sketches of 100,000), estimate (of one of them)
//   airlift_build p lo hi strs   -> bytes, then a description: an airlift HyperLogLog of
//                                   2^p buckets, ids lo..hi-1 (add(long)) then strs (add(Slice))
//   airlift_read hex             -> bytes (newInstance, then serialized again), then a description
//   airlift_union hex...         -> the first merged with the others in turn: bytes, then a description
//   airlift_hash x               -> Murmur3Hash128.hash64 of a long ("l" and the number) or of bytes
//                                   (hex, "-" for none)
//   airlift_time op n            -> nanoseconds for n operations at 4,096 buckets, after as many
//                                   to warm up: op add (a long into a dense sketch of 100,000),
//                                   build (a sparse sketch of 300 longs, serialized), union (of
//                                   100 dense sketches of 100,000), estimate (of one of them)
// An airlift description is: the cardinality.
// A ZetaSketch description is: the estimate (longResult), the number of
// values, the normal and the sparse precision.
// A CPC description is: estimate, lower bounds at 1..3, upper bounds at
// 1..3 standard deviations (kappa), lg_k.
//   kll_build type k values ranks at splits   -> bytes, then a KLL description
//   kll_read type k hex ranks at splits       -> bytes, then a KLL description
//   kll_merge type k hex,hex,... ranks at splits -> the merge's bytes, then a KLL description
// type is "double" (KllDoublesSketch) or "long" (KllLongsSketch); values,
// at (values to rank) and splits are comma-separated 16-digit hex bit
// patterns of the items (Double.doubleToRawLongBits for doubles), ranks
// of doubles, "-" for none. A KLL description is: n, retained, estimation
// (0 or 1), then, unless empty ("-" for each), min, max, the normalized
// rank error and its PMF variant, the quantiles at ranks inclusive and
// exclusive, the quantile lower and upper bounds, the ranks of at
// inclusive and exclusive, the CDF and PMF at splits inclusive and
// exclusive; items in bit patterns as above, the rest as doubles' bits.
// A theta description is: estimate, lower bounds at 1..3, upper bounds at
// 1..3 standard deviations, retained, theta (long). A freq description is:
// estimate, lower and upper bound at 2, retained, theta (long), the sum of
// the counts, and a digest of the (key, count) pairs in key order:
// d = d*1000003 + (key ^ (count << 1)), from 0, in 64-bit arithmetic.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;

import static org.apache.datasketches.quantilescommon.QuantileSearchCriteria.EXCLUSIVE;
import static org.apache.datasketches.quantilescommon.QuantileSearchCriteria.INCLUSIVE;

import org.apache.datasketches.cpc.CpcSketch;
import org.apache.datasketches.cpc.CpcUnion;
import org.apache.datasketches.hll.HllSketch;
import org.apache.datasketches.hll.TgtHllType;
import org.apache.datasketches.kll.KllDoublesSketch;
import org.apache.datasketches.kll.KllLongsSketch;
import org.apache.datasketches.memory.Memory;
import org.apache.datasketches.theta.CompactSketch;
import org.apache.datasketches.theta.SetOperation;
import org.apache.datasketches.theta.Sketch;
import org.apache.datasketches.theta.UpdateSketch;
import org.apache.datasketches.tuple.TupleSketchIterator;
import org.apache.datasketches.tuple.Sketches;
import org.apache.datasketches.tuple.Union;
import org.apache.datasketches.tuple.aninteger.IntegerSketch;
import org.apache.datasketches.tuple.aninteger.IntegerSummary;
import org.apache.datasketches.tuple.aninteger.IntegerSummaryDeserializer;
import org.apache.datasketches.tuple.aninteger.IntegerSummarySetOperations;

import com.google.zetasketch.HyperLogLogPlusPlus;
import io.airlift.slice.Murmur3Hash128;
import io.airlift.slice.Slices;
import io.airlift.stats.cardinality.HyperLogLog;
import com.google.zetasketch.internal.hash.Hash;

public final class Interop {
  private static final HexFormat HEX = HexFormat.of();

  public static void main(String[] args) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
    // Libraries that print (airlift's object-size library warns on
    // stdout) must not break the one-line answers. That library's sizes
    // come from field offsets; its attempts to attach to the JVM (seconds
    // each) give it nothing it uses here.
    System.setOut(System.err);
    System.setProperty("jol.skipDynamicAttach", "true");
    System.setProperty("jol.skipHotspotSAAttach", "true");
    String line;
    while ((line = in.readLine()) != null) {
      String[] t = line.trim().split(" ");
      String answer;
      try {
        answer = "ok " + String.join(" ", run(t));
      } catch (Throwable e) {
        answer = "err " + (e.getClass().getSimpleName() + ": " + e.getMessage()).replace('\n', ' ');
      }
      out.println(answer);
      out.flush();
    }
  }

  private static List<String> run(String[] t) {
    switch (t[0]) {
      case "theta_build": {
        UpdateSketch sk = UpdateSketch.builder().setNominalEntries(1 << Integer.parseInt(t[1])).build();
        for (long v = Long.parseLong(t[2]); v < Long.parseLong(t[3]); v++) {
          sk.update(v);
        }
        for (String s : strings(t[4])) {
          sk.update(s);
        }
        CompactSketch c = sk.compact(true, null);
        List<String> r = new ArrayList<>();
        r.add(hex(c.toByteArray()));
        r.add(hex(c.toByteArrayCompressed()));
        r.add(hex(sk.toByteArray()));
        describe(r, c);
        return r;
      }
      case "theta_read": {
        CompactSketch c = Sketch.heapify(Memory.wrap(HEX.parseHex(t[1]))).compact(true, null);
        List<String> r = new ArrayList<>();
        r.add(hex(c.toByteArray()));
        describe(r, c);
        return r;
      }
      case "theta_union": {
        org.apache.datasketches.theta.Union u = SetOperation.builder().setNominalEntries(1 << Integer.parseInt(t[1])).buildUnion();
        for (int i = 2; i < t.length; i++) {
          u.union(Sketch.heapify(Memory.wrap(HEX.parseHex(t[i]))));
        }
        CompactSketch c = u.getResult(true, null);
        List<String> r = new ArrayList<>();
        r.add(hex(c.toByteArray()));
        describe(r, c);
        return r;
      }
      case "freq_build": {
        IntegerSketch sk = new IntegerSketch(Integer.parseInt(t[1]), IntegerSummary.Mode.Sum);
        for (long v = Long.parseLong(t[2]); v < Long.parseLong(t[3]); v++) {
          sk.update(v, 1);
        }
        int extra = Integer.parseInt(t[6]);
        for (long v = Long.parseLong(t[4]); v < Long.parseLong(t[5]); v++) {
          sk.update(v, extra);
        }
        return freq(sk.compact());
      }
      case "freq_read":
        return freq(Sketches.heapifySketch(Memory.wrap(HEX.parseHex(t[1])), new IntegerSummaryDeserializer()));
      case "freq_union": {
        Union<IntegerSummary> u = new Union<>(1 << Integer.parseInt(t[1]),
            new IntegerSummarySetOperations(IntegerSummary.Mode.Sum, IntegerSummary.Mode.Sum));
        for (int i = 2; i < t.length; i++) {
          u.union(Sketches.heapifySketch(Memory.wrap(HEX.parseHex(t[i])), new IntegerSummaryDeserializer()));
        }
        return freq(u.getResult());
      }
      case "hll_build": {
        HllSketch sk = new HllSketch(Integer.parseInt(t[1]), TgtHllType.valueOf(t[2]));
        for (long v = Long.parseLong(t[3]); v < Long.parseLong(t[4]); v++) {
          sk.update(v);
        }
        for (String s : strings(t[5])) {
          sk.update(s);
        }
        List<String> r = new ArrayList<>();
        r.add(hex(sk.toCompactByteArray()));
        r.add(hex(sk.toUpdatableByteArray()));
        describe(r, sk);
        return r;
      }
      case "hll_read": {
        HllSketch sk = HllSketch.heapify(HEX.parseHex(t[1]));
        List<String> r = new ArrayList<>();
        r.add(hex(sk.toCompactByteArray()));
        describe(r, sk);
        return r;
      }
      case "hll_union": {
        org.apache.datasketches.hll.Union u = new org.apache.datasketches.hll.Union(Integer.parseInt(t[1]));
        for (int i = 3; i < t.length; i++) {
          u.update(HllSketch.heapify(HEX.parseHex(t[i])));
        }
        HllSketch sk = u.getResult(TgtHllType.valueOf(t[2]));
        List<String> r = new ArrayList<>();
        r.add(hex(sk.toCompactByteArray()));
        describe(r, sk);
        return r;
      }
      case "cpc_build": {
        CpcSketch sk = new CpcSketch(Integer.parseInt(t[1]));
        for (long v = Long.parseLong(t[2]); v < Long.parseLong(t[3]); v++) {
          sk.update(v);
        }
        for (String s : strings(t[4])) {
          sk.update(s);
        }
        return cpc(sk);
      }
      case "cpc_read":
        return cpc(CpcSketch.heapify(HEX.parseHex(t[1])));
      case "cpc_union": {
        CpcUnion u = new CpcUnion(Integer.parseInt(t[1]));
        for (int i = 2; i < t.length; i++) {
          u.update(CpcSketch.heapify(HEX.parseHex(t[i])));
        }
        return cpc(u.getResult());
      }
      case "kll_build":
      case "kll_read":
      case "kll_merge":
        return kll(t);
      case "zeta_build": {
        HyperLogLogPlusPlus.Builder b = new HyperLogLogPlusPlus.Builder().normalPrecision(Integer.parseInt(t[1]));
        int sp = Integer.parseInt(t[2]);
        if (sp == 0) {
          b.noSparseMode();
        } else if (sp > 0) {
          b.sparsePrecision(sp);
        }
        int reps = Integer.parseInt(t[6]);
        if (t[3].equals("longs")) {
          HyperLogLogPlusPlus<Long> h = b.buildForLongs();
          for (int k = 0; k < reps; k++) {
            for (long v = Long.parseLong(t[4]); v < Long.parseLong(t[5]); v++) {
              h.add(v);
            }
          }
          return zeta(h);
        }
        HyperLogLogPlusPlus<String> h = b.buildForStrings();
        for (int k = 0; k < reps; k++) {
          for (String v : strings(t[7])) {
            h.add(v);
          }
        }
        return zeta(h);
      }
      case "zeta_read":
        return zeta(HyperLogLogPlusPlus.forProto(HEX.parseHex(t[1])));
      case "zeta_union": {
        @SuppressWarnings("unchecked")
        HyperLogLogPlusPlus<Object> u = (HyperLogLogPlusPlus<Object>) HyperLogLogPlusPlus.forProto(HEX.parseHex(t[1]));
        for (int i = 2; i < t.length; i++) {
          u.merge(HEX.parseHex(t[i]));
        }
        return zeta(u);
      }
      case "airlift_build": {
        HyperLogLog h = HyperLogLog.newInstance(1 << Integer.parseInt(t[1]));
        for (long v = Long.parseLong(t[2]); v < Long.parseLong(t[3]); v++) {
          h.add(v);
        }
        for (String s : strings(t[4])) {
          h.add(Slices.utf8Slice(s));
        }
        return airlift(h);
      }
      case "airlift_read":
        return airlift(HyperLogLog.newInstance(Slices.wrappedBuffer(HEX.parseHex(t[1]))));
      case "airlift_union": {
        HyperLogLog u = HyperLogLog.newInstance(Slices.wrappedBuffer(HEX.parseHex(t[1])));
        for (int i = 2; i < t.length; i++) {
          u.mergeWith(HyperLogLog.newInstance(Slices.wrappedBuffer(HEX.parseHex(t[i]))));
        }
        return airlift(u);
      }
      case "airlift_hash":
        if (t[1].startsWith("l")) {
          return List.of(Long.toString(Murmur3Hash128.hash64(Long.parseLong(t[1].substring(1)))));
        }
        return List.of(Long.toString(Murmur3Hash128.hash64(Slices.wrappedBuffer(t[1].equals("-") ? new byte[0] : HEX.parseHex(t[1])))));
      case "airlift_time":
        return List.of(Long.toString(airliftTime(t[1], Integer.parseInt(t[2]))));
      case "zeta_time":
        return List.of(Long.toString(zetaTime(t[1], Integer.parseInt(t[2]))));
      case "zeta_hash":
        return List.of(Long.toString(Hash.of(t[1].equals("-") ? new byte[0] : HEX.parseHex(t[1]))));
      default:
        throw new IllegalArgumentException("unknown request " + t[0]);
    }
  }

  private static long[] kllBits(String s) {
    if (s.equals("-")) {
      return new long[0];
    }
    String[] p = s.split(",");
    long[] r = new long[p.length];
    for (int i = 0; i < p.length; i++) {
      r[i] = Long.parseUnsignedLong(p[i], 16);
    }
    return r;
  }

  private static double[] kllDoubles(String s) {
    long[] b = kllBits(s);
    double[] d = new double[b.length];
    for (int i = 0; i < b.length; i++) {
      d[i] = Double.longBitsToDouble(b[i]);
    }
    return d;
  }

  private static String kllList(double[] d) {
    if (d == null || d.length == 0) {
      return "-";
    }
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < d.length; i++) {
      b.append(i > 0 ? "," : "").append(String.format("%016x", Double.doubleToRawLongBits(d[i])));
    }
    return b.toString();
  }

  private static String kllList(long[] v) {
    if (v == null || v.length == 0) {
      return "-";
    }
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < v.length; i++) {
      b.append(i > 0 ? "," : "").append(String.format("%016x", v[i]));
    }
    return b.toString();
  }

  private static List<String> kll(String[] t) {
    int k = Integer.parseInt(t[2]);
    double[] ranks = kllDoubles(t[4]);
    List<String> r = new ArrayList<>();
    if (t[1].equals("double")) {
      KllDoublesSketch s;
      if (t[0].equals("kll_build")) {
        s = KllDoublesSketch.newHeapInstance(k);
        for (double v : kllDoubles(t[3])) {
          s.update(v);
        }
      } else if (t[0].equals("kll_read")) {
        s = KllDoublesSketch.heapify(Memory.wrap(HEX.parseHex(t[3])));
      } else {
        s = KllDoublesSketch.newHeapInstance(k);
        for (String h : t[3].split(",")) {
          s.merge(KllDoublesSketch.heapify(Memory.wrap(HEX.parseHex(h))));
        }
      }
      r.addAll(Arrays.asList(HEX.formatHex(s.toByteArray()), Long.toString(s.getN()), Integer.toString(s.getNumRetained()),
          s.isEstimationMode() ? "1" : "0"));
      if (s.isEmpty()) {
        r.addAll(Arrays.asList("- - - - - - - - - - - - - -".split(" ")));
        return r;
      }
      double[] at = kllDoubles(t[5]);
      double[] splits = kllDoubles(t[6]);
      double[] lo = new double[ranks.length];
      double[] hi = new double[ranks.length];
      for (int i = 0; i < ranks.length; i++) {
        lo[i] = s.getQuantileLowerBound(ranks[i]);
        hi[i] = s.getQuantileUpperBound(ranks[i]);
      }
      r.addAll(Arrays.asList(kllList(new double[] {s.getMinItem()}), kllList(new double[] {s.getMaxItem()}),
          kllList(new double[] {s.getNormalizedRankError(false)}), kllList(new double[] {s.getNormalizedRankError(true)}),
          kllList(s.getQuantiles(ranks, INCLUSIVE)), kllList(s.getQuantiles(ranks, EXCLUSIVE)), kllList(lo), kllList(hi),
          kllList(s.getRanks(at, INCLUSIVE)), kllList(s.getRanks(at, EXCLUSIVE))));
      if (splits.length == 0) {
        r.addAll(Arrays.asList("-", "-", "-", "-"));
      } else {
        r.addAll(Arrays.asList(kllList(s.getCDF(splits, INCLUSIVE)), kllList(s.getCDF(splits, EXCLUSIVE)),
            kllList(s.getPMF(splits, INCLUSIVE)), kllList(s.getPMF(splits, EXCLUSIVE))));
      }
      return r;
    }
    KllLongsSketch s;
    if (t[0].equals("kll_build")) {
      s = KllLongsSketch.newHeapInstance(k);
      for (long v : kllBits(t[3])) {
        s.update(v);
      }
    } else if (t[0].equals("kll_read")) {
      s = KllLongsSketch.heapify(Memory.wrap(HEX.parseHex(t[3])));
    } else {
      s = KllLongsSketch.newHeapInstance(k);
      for (String h : t[3].split(",")) {
        s.merge(KllLongsSketch.heapify(Memory.wrap(HEX.parseHex(h))));
      }
    }
    r.addAll(Arrays.asList(HEX.formatHex(s.toByteArray()), Long.toString(s.getN()), Integer.toString(s.getNumRetained()),
        s.isEstimationMode() ? "1" : "0"));
    if (s.isEmpty()) {
      r.addAll(Arrays.asList("- - - - - - - - - - - - - -".split(" ")));
      return r;
    }
    long[] at = kllBits(t[5]);
    long[] splits = kllBits(t[6]);
    long[] lo = new long[ranks.length];
    long[] hi = new long[ranks.length];
    for (int i = 0; i < ranks.length; i++) {
      lo[i] = s.getQuantileLowerBound(ranks[i]);
      hi[i] = s.getQuantileUpperBound(ranks[i]);
    }
    r.addAll(Arrays.asList(kllList(new long[] {s.getMinItem()}), kllList(new long[] {s.getMaxItem()}),
        kllList(new double[] {s.getNormalizedRankError(false)}), kllList(new double[] {s.getNormalizedRankError(true)}),
        kllList(s.getQuantiles(ranks, INCLUSIVE)), kllList(s.getQuantiles(ranks, EXCLUSIVE)), kllList(lo), kllList(hi),
        kllList(s.getRanks(at, INCLUSIVE)), kllList(s.getRanks(at, EXCLUSIVE))));
    if (splits.length == 0) {
      r.addAll(Arrays.asList("-", "-", "-", "-"));
    } else {
      r.addAll(Arrays.asList(kllList(s.getCDF(splits, INCLUSIVE)), kllList(s.getCDF(splits, EXCLUSIVE)),
          kllList(s.getPMF(splits, INCLUSIVE)), kllList(s.getPMF(splits, EXCLUSIVE))));
    }
    return r;
  }

  private static List<String> strings(String list) {
    List<String> r = new ArrayList<>();
    if (list.equals("-")) {
      return r;
    }
    for (String h : list.split(",")) {
      r.add(new String(HEX.parseHex(h.substring(1)), StandardCharsets.UTF_8));
    }
    return r;
  }

  private static String hex(byte[] b) {
    return b.length == 0 ? "-" : HEX.formatHex(b);
  }

  private static String bits(double d) {
    return Long.toString(Double.doubleToLongBits(d));
  }

  private static void describe(List<String> r, Sketch s) {
    r.add(bits(s.getEstimate()));
    for (int sd = 1; sd <= 3; sd++) {
      r.add(bits(s.getLowerBound(sd)));
    }
    for (int sd = 1; sd <= 3; sd++) {
      r.add(bits(s.getUpperBound(sd)));
    }
    r.add(Integer.toString(s.getRetainedEntries(true)));
    r.add(Long.toString(s.getThetaLong()));
  }

  private static long sink;

  private static HyperLogLogPlusPlus<Long> zetaFilled(long lo) {
    HyperLogLogPlusPlus<Long> h = new HyperLogLogPlusPlus.Builder().normalPrecision(15).buildForLongs();
    for (long v = lo; v < lo + 100_000; v++) {
      h.add(v);
    }
    return h;
  }

  private static long zetaTime(String op, int n) {
    List<HyperLogLogPlusPlus<Long>> in = new ArrayList<>();
    if (op.equals("union")) {
      for (int i = 0; i < 100; i++) {
        in.add(zetaFilled(i * 50_000L));
      }
    } else {
      in.add(zetaFilled(0));
    }
    long elapsed = 0;
    long v = 1L << 40;
    for (int round = 0; round < 2; round++) {
      long start = System.nanoTime();
      for (int i = 0; i < n; i++) {
        switch (op) {
          case "add":
            in.get(0).add(v++);
            break;
          case "build": {
            HyperLogLogPlusPlus<Long> h = new HyperLogLogPlusPlus.Builder().normalPrecision(15).buildForLongs();
            for (int k = 0; k < 5000; k++) {
              h.add(v++);
            }
            sink += h.serializeToByteArray().length;
            break;
          }
          case "union": {
            HyperLogLogPlusPlus<Long> u = new HyperLogLogPlusPlus.Builder().normalPrecision(15).buildForLongs();
            for (HyperLogLogPlusPlus<Long> h : in) {
              u.merge(h);
            }
            sink += u.longResult();
            break;
          }
          case "estimate":
            sink += in.get(0).longResult();
            break;
          default:
            throw new IllegalArgumentException("unknown timing " + op);
        }
      }
      elapsed = System.nanoTime() - start;
    }
    return elapsed;
  }

  private static List<String> airlift(HyperLogLog h) {
    List<String> r = new ArrayList<>();
    r.add(hex(h.serialize().getBytes()));
    r.add(Long.toString(h.cardinality()));
    return r;
  }

  private static HyperLogLog airliftFilled(long lo) {
    HyperLogLog h = HyperLogLog.newInstance(4096);
    for (long v = lo; v < lo + 100_000; v++) {
      h.add(v);
    }
    return h;
  }

  private static long airliftTime(String op, int n) {
    List<HyperLogLog> in = new ArrayList<>();
    if (op.equals("union")) {
      for (int i = 0; i < 100; i++) {
        in.add(airliftFilled(i * 50_000L));
      }
    } else {
      in.add(airliftFilled(0));
    }
    long elapsed = 0;
    long v = 1L << 40;
    for (int round = 0; round < 2; round++) {
      long start = System.nanoTime();
      for (int i = 0; i < n; i++) {
        switch (op) {
          case "add":
            in.get(0).add(v++);
            break;
          case "build": {
            HyperLogLog h = HyperLogLog.newInstance(4096);
            for (int k = 0; k < 300; k++) {
              h.add(v++);
            }
            sink += h.serialize().length();
            break;
          }
          case "union": {
            HyperLogLog u = HyperLogLog.newInstance(4096);
            for (HyperLogLog h : in) {
              u.mergeWith(h);
            }
            sink += u.cardinality();
            break;
          }
          case "estimate":
            sink += in.get(0).cardinality();
            break;
          default:
            throw new IllegalArgumentException("unknown timing " + op);
        }
      }
      elapsed = System.nanoTime() - start;
    }
    return elapsed;
  }

  private static List<String> zeta(HyperLogLogPlusPlus<?> h) {
    List<String> r = new ArrayList<>();
    r.add(hex(h.serializeToByteArray()));
    r.add(Long.toString(h.longResult()));
    r.add(Long.toString(h.numValues()));
    r.add(Integer.toString(h.getNormalPrecision()));
    r.add(Integer.toString(h.getSparsePrecision()));
    return r;
  }

  private static List<String> cpc(CpcSketch s) {
    List<String> r = new ArrayList<>();
    r.add(hex(s.toByteArray()));
    r.add(bits(s.getEstimate()));
    for (int sd = 1; sd <= 3; sd++) {
      r.add(bits(s.getLowerBound(sd)));
    }
    for (int sd = 1; sd <= 3; sd++) {
      r.add(bits(s.getUpperBound(sd)));
    }
    r.add(Integer.toString(s.getLgK()));
    return r;
  }

  private static void describe(List<String> r, HllSketch s) {
    r.add(bits(s.getEstimate()));
    for (int sd = 1; sd <= 3; sd++) {
      r.add(bits(s.getLowerBound(sd)));
    }
    for (int sd = 1; sd <= 3; sd++) {
      r.add(bits(s.getUpperBound(sd)));
    }
    r.add(Integer.toString(s.getLgConfigK()));
    r.add(new String[] {"LIST", "SET", "HLL", "?"}[s.toCompactByteArray()[7] & 3]);
  }

  private static List<String> freq(org.apache.datasketches.tuple.Sketch<IntegerSummary> s) {
    List<String> r = new ArrayList<>();
    if (s instanceof org.apache.datasketches.tuple.CompactSketch) {
      r.add(hex(((org.apache.datasketches.tuple.CompactSketch<IntegerSummary>) s).toByteArray()));
    } else {
      r.add("-");
    }
    r.add(bits(s.getEstimate()));
    r.add(bits(s.getLowerBound(2)));
    r.add(bits(s.getUpperBound(2)));
    r.add(Integer.toString(s.getRetainedEntries()));
    r.add(Long.toString(s.getThetaLong()));
    int n = s.getRetainedEntries();
    long[][] pairs = new long[n][];
    long sum = 0;
    int i = 0;
    TupleSketchIterator<IntegerSummary> it = s.iterator();
    while (it.next()) {
      long c = it.getSummary().getValue();
      pairs[i++] = new long[] {it.getHash(), c};
      sum += c;
    }
    Arrays.sort(pairs, (a, b) -> Long.compare(a[0], b[0]));
    long d = 0;
    for (long[] p : pairs) {
      d = d * 1000003L + (p[0] ^ (p[1] << 1));
    }
    r.add(Long.toString(sum));
    r.add(Long.toString(d));
    return r;
  }
}
